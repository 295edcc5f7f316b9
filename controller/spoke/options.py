"""The settings of `addon-status run`: its flags (declared once, with `controller.flags`),
`ADDON_STATUS_*` variables and defaults, validated in `RunOptions` before the controller
touches the network. The report API's flags are `controller.report_api.flags`'s own
(`REPORT_API_FLAGS`)."""

from __future__ import annotations

import argparse
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from controller.flags import (
    ADDON_KIND,
    ELECTION_FLAGS,
    ENV_PREFIX,
    LABEL,
    NAME,
    PROCESS_FLAGS,
    Flag,
    OptionsError,
    add_flags,
)
from controller.flags.options import (
    Address,
    ProcessOptions,
    first_problem,
    named_after_kind,
    shown_defaults,
)
from controller.kube.api import ADDON_KINDS
from controller.report_api.flags import REPORT_API_FLAGS, combination_problem
from controller.spoke.addon import AddonRef
from statemachines.config import Config
from statemachines.config_file import load_configuration
from statemachines.errors import ConfigError
from statemachines.object_names import ADDON_CR, ADDON_NAMESPACE, SHOWN_COPY_NAME, SPOKE_LEASE
from statemachines.settings import Duration, Settings
from statemachines.vocabulary import PROFILES

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_NAME",
    "DEFAULT_NAMESPACE",
    "RUN_FLAGS",
    "Address",
    "OptionsError",
    "RunOptions",
    "add_run_flags",
]

DEFAULT_NAME = ADDON_CR
DEFAULT_NAMESPACE = ADDON_NAMESPACE
DEFAULT_LEASE = SPOKE_LEASE

_SPOKE_FLAGS = (
    Flag("addon_name", "--addon-name", "name of the addon CR", "NAME", shown=SHOWN_COPY_NAME),
    Flag("addon_namespace", "--addon-namespace", "its namespace", "NS"),
    Flag("profile", "--profile", "names written: seed or acm", "NAME"),
    ADDON_KIND,
    Flag("collectors", "--collectors", "comma-separated collectors", "LIST", shown="all"),
    Flag("config_file", "--config", "configuration file: resources, collectorSettings", "FILE"),
    Flag("degrade_after", "--degrade-after", "dampening window before Degraded", "DUR"),
    Flag("recover_after", "--recover-after", "dampening window before recovery", "DUR"),
    Flag("report_interval", "--report-interval", "how often collectors report", "DUR"),
    Flag("stale_after", "--stale-after", "silence before ReportsStale", "DUR",
         shown="3 report intervals"),
    Flag("history_limit", "--history-limit", "changes status.history keeps; 0: none", "N"),
    Flag("hub_kubeconfig", "--hub-kubeconfig", "kubeconfig of the hub", "PATH",
         shown="none: no copy"),
    Flag("cluster_name", "--cluster-name", "this cluster on the hub: the copy's namespace", "NAME"),
    Flag("hub_addon_name", "--hub-addon-name", "name of the hub copy", "NAME",
         shown="--addon-name"),
    Flag("hub_copy", "--hub-copy", "what to copy: conditions or status", "WHAT"),
    Flag("hub_resync", "--hub-resync", "re-read and repair the hub copy this often", "DUR"),
    Flag("hub_create_missing", "--hub-create-missing", "create a missing copy", kind="switch"),
)  # fmt: skip
RUN_FLAGS = (*PROCESS_FLAGS, *_SPOKE_FLAGS, *ELECTION_FLAGS, *REPORT_API_FLAGS)
"""Every flag of `run`."""


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `run`; each also reads `ADDON_STATUS_<FLAG>` from the environment."""
    settings = shown_defaults(Settings)  # the timings' defaults are the core's
    timings = {field: settings[field] for field in _BY_SETTING.values()}
    shown = {**shown_defaults(RunOptions), **timings, "lease_namespace": "--addon-namespace"}
    add_flags(parser, RUN_FLAGS, shown=shown)


class RunOptions(ProcessOptions):
    """Validated settings of one spoke controller."""

    FLAGS = RUN_FLAGS

    addon_name: str = Field(default=DEFAULT_NAME, pattern=NAME)
    addon_namespace: str = Field(default=DEFAULT_NAMESPACE, pattern=LABEL)
    profile: Literal["seed", "acm"] = "seed"
    addon_kind: Literal["ObservabilityAddon", "AddonStatus"] = "ObservabilityAddon"
    collectors: tuple[str, ...] | None = None
    config_file: Path | None = None  # resources (health rules), collectorSettings, profile
    degrade_after: Duration | None = None
    recover_after: Duration | None = None
    report_interval: Duration | None = None
    stale_after: Duration | None = None
    history_limit: int | None = None
    # the report API (controller.report_api.flags.REPORT_API_FLAGS)
    report_address: str = ":8090"
    authorization: Path | None = None
    operator_identity: tuple[str, ...] = ()
    collector_identity: tuple[str, ...] = ()
    token_table: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    issue_serving_cert: str | None = Field(default=None, pattern=NAME)
    insecure: bool = False
    # the hub copy
    hub_kubeconfig: Path | None = None  # None: no replication to the hub
    cluster_name: str | None = Field(default=None, pattern=LABEL)
    hub_addon_name: str | None = Field(default=None, pattern=NAME)
    hub_copy: Literal["conditions", "status"] = "conditions"
    hub_resync: Duration = timedelta(minutes=5)
    hub_create_missing: bool = False
    # leader election: the Lease's name (its namespace: the addon's unless set)
    lease_name: str = Field(default=DEFAULT_LEASE, pattern=NAME)

    @field_validator("collectors", "operator_identity", "collector_identity", mode="before")
    @classmethod
    def _split(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(v.strip() for v in value.split(",") if v.strip())
        return value

    @field_validator("report_address")
    @classmethod
    def _report_address(cls, value: str) -> str:
        Address.parse(value)  # kept as written: report_cli picks the host for an empty one
        return value

    @model_validator(mode="before")
    @classmethod
    def _named_after_its_kind(cls, data: Any) -> Any:
        return named_after_kind(data, "addon_name")

    @model_validator(mode="after")
    def _fits_together(self) -> RunOptions:
        """Raised as OptionsError (pydantic passes it through), naming both flags."""
        if self.hub_kubeconfig is not None and self.cluster_name is None:
            raise OptionsError(
                f"{_names('cluster_name')}: required with --hub-kubeconfig "
                "(the hub namespace of this cluster's addon copy)"
            )
        if self.hub_resync <= timedelta(0):
            raise OptionsError(f"{_names('hub_resync')}: must be positive")
        return self

    @classmethod
    def problem(cls, error: ValidationError) -> str:
        """The first problem, named by its flag and variable; a rule over several timings as
        such."""
        problem = first_problem(error, RUN_FLAGS, aliases=_BY_SETTING)
        return problem if problem.startswith("--") else f"timing settings: {problem}"

    def check(self) -> None:
        """The kubeconfigs exist; the collectors, timings and configuration file fit; the report
        API's flags fit together."""
        super().check()
        if self.hub_kubeconfig is not None and not self.hub_kubeconfig.is_file():
            raise OptionsError(f"kubeconfig {self.hub_kubeconfig}: no such file")
        self.config()
        problem = combination_problem(self)
        if problem is not None:
            raise OptionsError(problem)

    @property
    def ref(self) -> AddonRef:
        return AddonRef(self.addon_namespace, self.addon_name, ADDON_KINDS[self.addon_kind])

    @property
    def hub_ref(self) -> AddonRef | None:
        """The hub copy of the addon CR (namespace: the cluster's name); None without a name."""
        if self.cluster_name is None:
            return None
        return AddonRef(
            self.cluster_name, self.hub_addon_name or self.addon_name, ADDON_KINDS[self.addon_kind]
        )

    @property
    def lease_ref(self) -> AddonRef:
        """The Lease of leader election (an `AddonRef` is any namespaced name)."""
        return AddonRef(self.lease_namespace or self.addon_namespace, self.lease_name)

    def config(self) -> Config:
        """The core's configuration: the collectors and their timings from the flags, the rest
        (resources, collectorSettings) from `--config`; raises OptionsError naming the file,
        the path in it and what is wrong."""
        timings = {
            "degradeAfter": self.degrade_after,
            "recoverAfter": self.recover_after,
            "reportInterval": self.report_interval,
            "staleAfter": self.stale_after,
            "historyLimit": self.history_limit,
        }
        try:
            settings = Settings.model_validate({k: v for k, v in timings.items() if v is not None})
            profile = PROFILES[self.profile]
            config = Config.create(profile=profile, collectors=self.collectors, settings=settings)
        except ValidationError as error:
            raise OptionsError(self.problem(error)) from None
        except ConfigError as error:
            raise OptionsError(f"--collectors / {ENV_PREFIX}COLLECTORS: {error}") from error
        if self.config_file is None:
            return config
        try:
            text = self.config_file.read_bytes()  # decoded by the YAML reader, which says where
        except OSError as error:
            problem = f"{self.config_file}: {error.strerror}"
            raise OptionsError(f"{_names('config_file')}: {problem}") from error
        try:
            return load_configuration(
                text,
                source=str(self.config_file),
                namespace=self.addon_namespace,
                collectors=self.collectors,
                settings=settings,
                profile=profile,
            )[0]
        except ConfigError as error:
            raise OptionsError(str(error)) from error


def _names(field: str) -> str:
    return next(f for f in RUN_FLAGS if f.field == field).names


_BY_SETTING = {
    "degradeAfter": "degrade_after",
    "recoverAfter": "recover_after",
    "reportInterval": "report_interval",
    "staleAfter": "stale_after",
    "historyLimit": "history_limit",
}
