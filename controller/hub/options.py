"""The settings of `addon-status hub`: its flags (declared once, with `controller.flags`, and
`ADDON_STATUS_*` variables as every process has them), validated in `HubOptions`."""

from __future__ import annotations

import argparse
import os
from datetime import timedelta

from pydantic import Field, model_validator

from controller.flags import (
    ELECTION_FLAGS,
    LABEL,
    NAME,
    PROCESS_FLAGS,
    Flag,
    OptionsError,
    ProcessOptions,
    add_flags,
)
from statemachines.settings import Duration

__all__ = ["HUB_FLAGS", "HubOptions", "add_hub_flags"]

_HUB_FLAGS = (
    Flag("addon_name", "--addon-name",
         "the ManagedClusterAddOn in each cluster namespace (observability-controller)", "NAME"),
    Flag("copy_name", "--copy-name",
         "the hub copies: the ObservabilityAddon of this name in each cluster namespace "
         "(observability-addon)", "NAME"),
    Flag("namespace_selector", "--namespace-selector",
         "only cluster namespaces with these labels (e.g. env=prod); needs `list namespaces` "
         "(manifests/hub-controller/namespace-selector)", "SELECTOR"),
    Flag("resync", "--resync", "re-read every ManagedClusterAddOn and repair it this often (5m)",
         "DUR"),
)  # fmt: skip
HUB_FLAGS = (*PROCESS_FLAGS, *_HUB_FLAGS, *ELECTION_FLAGS)
"""Every flag of `hub`."""


def add_hub_flags(parser: argparse.ArgumentParser) -> None:
    add_flags(parser, HUB_FLAGS)


class HubOptions(ProcessOptions):
    """Validated settings of one hub-side replica."""

    FLAGS = HUB_FLAGS

    addon_name: str = Field(default="observability-controller", pattern=NAME)
    copy_name: str = Field(default="observability-addon", pattern=NAME)
    namespace_selector: str = ""
    resync: Duration = timedelta(minutes=5)
    lease_name: str = Field(default="addon-status-hub-controller", pattern=NAME)
    lease_namespace: str | None = Field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE") or None, pattern=LABEL
    )

    @model_validator(mode="after")
    def _positive_resync(self) -> HubOptions:
        if self.resync <= timedelta(0):
            raise OptionsError(f"{HUB_FLAGS[len(PROCESS_FLAGS) + 3].names}: must be positive")
        return self
