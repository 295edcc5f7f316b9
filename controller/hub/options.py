"""The settings of `addon-status hub`: its flags (declared once, with `controller.flags`, and
`ADDON_STATUS_*` variables as every process has them), validated in `HubOptions`."""

from __future__ import annotations

import argparse
import os
import re
from dataclasses import replace
from datetime import timedelta
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from controller.flags import (
    ADDON_KIND,
    AGENT_ADDON,
    COPY_NAME,
    ELECTION_FLAGS,
    LABEL,
    MANAGED_ADDON_NAME,
    NAME,
    PROCESS_FLAGS,
    Flag,
    OptionsError,
    add_flags,
)
from controller.flags.options import ProcessOptions, named_after_kind, shown_defaults
from statemachines.object_names import ADDON_CR, HUB_SIDE, MANAGED_ADDON, SHOWN_COPY_NAME
from statemachines.settings import Duration

__all__ = [
    "HUB_FLAGS",
    "HubOptions",
    "add_hub_flags",
    "selector_problem",
]

_HUB_FLAGS = (
    MANAGED_ADDON_NAME,
    replace(COPY_NAME, shown=SHOWN_COPY_NAME),
    ADDON_KIND,
    Flag("namespace_selector", "--namespace-selector",
         "only cluster namespaces with these labels too (e.g. env=prod)", "SELECTOR",
         shown="every cluster namespace"),
    Flag("resync", "--resync",
         "compare every cluster's hub copy and ManagedClusterAddOn in memory this often, "
         "without a read", "DUR"),
    replace(AGENT_ADDON, group="when the path from a spoke breaks"),
    Flag("path_window", "--path-window",
         "a break OCM reports (agent down, cluster lost, not registered) counts once it has "
         "held this long", "DUR", group="when the path from a spoke breaks"),
    Flag("replication_grace", "--replication-grace",
         "a cluster whose hub copy has not come this long after its agent was deployed is "
         "Degraded", "DUR", group="when the path from a spoke breaks"),
    Flag("access_check", "--access-check",
         "ask whether each cluster's agent may write its hub copy this often, with a "
         "SubjectAccessReview (0: never)", "DUR", group="when the path from a spoke breaks"),
    Flag("console_link", "--console-link",
         "a link from the console's addon row to the cluster's dashboard: a URL, {cluster} "
         "replaced with the cluster's name", "URL", group="the console's link"),
    Flag("console_link_text", "--console-link-text",
         "the link's text", "TEXT", group="the console's link"),
)  # fmt: skip
HUB_FLAGS = (*PROCESS_FLAGS, *_HUB_FLAGS, *ELECTION_FLAGS)
"""Every flag of `hub`."""


def add_hub_flags(parser: argparse.ArgumentParser) -> None:
    shown = {**shown_defaults(HubOptions), "lease_namespace": "$POD_NAMESPACE"}
    add_flags(parser, HUB_FLAGS, shown=shown)


_NAME_PART = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^([a-z0-9]([-a-z0-9.]{{0,251}}[a-z0-9])?/)?{_NAME_PART}$")
_VALUE = re.compile(rf"^({_NAME_PART})?$")
_REQUIREMENT = re.compile(
    r"^\s*(?:(?P<absent>!)\s*(?P<key1>[^\s!=(),]+)"
    r"|(?P<key2>[^\s!=(),]+)\s*(?:(?P<op>==|!=|=)\s*(?P<value>[^\s!=(),]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*$"
)


def selector_problem(selector: str) -> str | None:
    """Why `selector` is not a Kubernetes label selector (`env=prod,tier in (a,b),!canary`);
    None when it is one. kube-apiserver would refuse the list with 400 at every resync."""
    requirements = re.split(r",(?![^()]*\))", selector) if selector.strip() else []
    for requirement in requirements:
        found = _REQUIREMENT.match(requirement)
        if found is None:
            form = "key, !key, key=value, key!=value, key in (...), key notin (...)"
            return f"{requirement.strip()!r} is not a requirement ({form})"
        key = found.group("key1") or found.group("key2")
        if not _KEY.match(key):
            return f"{key!r} is not a label key"
        values = [found.group("value")] if found.group("op") else []
        if found.group("set"):
            values = [v.strip() for v in found.group("values").split(",")]
        if bad := [v for v in values if not _VALUE.match(v or "")]:
            return f"{bad[0]!r} is not a label value"
    return None


class HubOptions(ProcessOptions):
    """Validated settings of one hub-side replica."""

    FLAGS = HUB_FLAGS

    addon_name: str = Field(default=MANAGED_ADDON, pattern=NAME)
    copy_name: str = Field(default=ADDON_CR, pattern=NAME)
    addon_kind: Literal["ObservabilityAddon", "AddonStatus"] = "ObservabilityAddon"
    namespace_selector: str = ""
    resync: Duration = timedelta(minutes=5)
    agent_addon: str = Field(default="", pattern=rf"^$|{NAME}")
    path_window: Duration = timedelta(minutes=2)
    replication_grace: Duration = timedelta(minutes=10)
    access_check: Duration = timedelta(minutes=20)
    console_link: str = Field(default="", max_length=2048, pattern=r"^$|^https?://\S+$")
    console_link_text: str = Field(default="Metrics dashboard", min_length=1, max_length=256)
    lease_name: str = Field(default=HUB_SIDE, pattern=NAME)
    lease_namespace: str | None = Field(
        default_factory=lambda: os.environ.get("POD_NAMESPACE") or None, pattern=LABEL
    )

    @field_validator("namespace_selector")
    @classmethod
    def _selector(cls, value: str) -> str:
        problem = selector_problem(value)
        if problem is not None:
            raise ValueError(problem)
        return value

    @model_validator(mode="before")
    @classmethod
    def _copies_named_after_their_kind(cls, data: Any) -> Any:
        return named_after_kind(data, "copy_name")

    @model_validator(mode="after")
    def _positive_durations(self) -> HubOptions:
        for flag in _HUB_FLAGS:
            if flag.field in ("resync", "path_window", "replication_grace") and getattr(
                self, flag.field
            ) <= timedelta(0):
                raise OptionsError(f"{flag.names}: must be positive")
        if self.access_check < timedelta(0):
            raise OptionsError(f"{_HUB_FLAGS[-3].names}: must be 0 or more")
        return self
