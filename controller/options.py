"""The settings of `addon-status run`: flags, `ADDON_STATUS_*` environment variables, defaults.

A flag wins over its environment variable, which wins over the default. Everything is checked
before the controller touches the network, and a mistake is one line naming the flag and the
variable (`--degrade-after / ADDON_STATUS_DEGRADE_AFTER: 'soon' is not a duration ...`), so a
Deployment that is misconfigured says why in its first log line instead of a traceback.

The report API's flags are `controller.reports.cli`'s own (`add_report_api_flags`); they read
`ADDON_STATUS_*` too. A variable for a repeatable flag holds a comma-separated list, one for a
switch `true` or `false`.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from controller.kube.addons import AddonRef
from controller.reports.cli import add_report_api_flags
from statemachines.config import Config
from statemachines.configuration import load_configuration
from statemachines.errors import AddonStatusError, ConfigError
from statemachines.settings import Duration, Settings
from statemachines.vocabulary import PROFILES

__all__ = [
    "DEFAULT_LEASE",
    "DEFAULT_NAME",
    "DEFAULT_NAMESPACE",
    "Address",
    "OptionsError",
    "RunOptions",
    "add_run_flags",
]

DEFAULT_NAME = "observability-addon"
DEFAULT_NAMESPACE = "open-cluster-management-addon-observability"
DEFAULT_LEASE = "addon-status-controller"
ENV_PREFIX = "ADDON_STATUS_"
_NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"  # an object's name (DNS subdomain)
_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a namespace's name (DNS label)


class OptionsError(AddonStatusError):
    """A flag or environment variable of `run` that cannot be used; one line, no traceback."""


@dataclass(frozen=True, slots=True)
class _Option:
    field: str
    flag: str
    help: str
    metavar: str | None = None
    kind: Literal["value", "switch", "list"] = "value"

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag.removeprefix("--").replace("-", "_").upper()

    @property
    def names(self) -> str:
        return f"{self.flag} / {self.env}"


_OPTIONS = (
    _Option("kubeconfig", "--kubeconfig", "kubeconfig of the spoke (default: in-cluster)", "PATH"),
    _Option("addon_name", "--addon-name", f"name of the addon CR (default {DEFAULT_NAME})"),
    _Option("addon_namespace", "--addon-namespace", f"its namespace (default {DEFAULT_NAMESPACE})"),
    _Option("profile", "--profile", "names written: seed or acm (seed)", "NAME"),
    _Option("collectors", "--collectors", "comma-separated collectors (default: all)", "LIST"),
    _Option("config_file", "--config", "configuration file: resources, collectorSettings", "FILE"),
    _Option("degrade_after", "--degrade-after", "dampening window before Degraded (10m)", "DUR"),
    _Option("recover_after", "--recover-after", "dampening window before recovery (0s)", "DUR"),
    _Option("report_interval", "--report-interval", "how often collectors report (5m)", "DUR"),
    _Option("stale_after", "--stale-after", "silence before ReportsStale (3 intervals)", "DUR"),
    _Option("history_limit", "--history-limit", "changes status.history keeps; 0: none (10)", "N"),
    _Option("metrics_address", "--metrics-address", "host:port of /metrics (:8080)", "ADDR"),
    _Option("probe_address", "--probe-address", "host:port of /healthz, /readyz (:8081)", "ADDR"),
    _Option("request_timeout", "--request-timeout", "seconds per API call (10)", "SECONDS"),
    _Option("log_level", "--log-level", "debug, info, warning or error (info)", "LEVEL"),
    _Option("hub_kubeconfig", "--hub-kubeconfig", "kubeconfig of the hub (none: no copy)", "PATH"),
    _Option(
        "cluster_name", "--cluster-name", "this cluster on the hub: the copy's namespace", "NAME"
    ),
    _Option("hub_addon_name", "--hub-addon-name", "name of the hub copy (--addon-name)", "NAME"),
    _Option("hub_copy", "--hub-copy", "what to copy: conditions or status (conditions)", "WHAT"),
    _Option("hub_resync", "--hub-resync", "re-read and repair the hub copy this often (5m)", "DUR"),
    _Option("hub_create_missing", "--hub-create-missing", "create a missing copy", kind="switch"),
    _Option("leader_elect", "--leader-elect", "elect one leader on a Lease (off)", kind="switch"),
    _Option("lease_name", "--lease-name", f"the Lease (default {DEFAULT_LEASE})", "NAME"),
    _Option("lease_namespace", "--lease-namespace", "its namespace (--addon-namespace)", "NS"),
    _Option("lease_duration", "--lease-duration", "a Lease not renewed is free after (15s)", "DUR"),
    _Option("renew_deadline", "--renew-deadline", "a leader unable to renew quits (10s)", "DUR"),
    _Option("retry_period", "--retry-period", "renew or try to acquire every (2s)", "DUR"),
)
# Added by `report_cli.add_report_api_flags`; listed here for their environment variables.
_REPORT_OPTIONS = (
    _Option("report_address", "--report-address", ""),
    _Option("authorization", "--authorization", ""),
    _Option("operator_identity", "--operator-identity", "", kind="list"),
    _Option("collector_identity", "--collector-identity", "", kind="list"),
    _Option("token_table", "--token-table", ""),
    _Option("tls_cert_file", "--tls-cert-file", ""),
    _Option("tls_key_file", "--tls-key-file", ""),
    _Option("insecure", "--insecure", "", kind="switch"),
)


def add_run_flags(parser: argparse.ArgumentParser) -> None:
    """The flags of `run`; each also reads `ADDON_STATUS_<FLAG>` from the environment."""
    for option in _OPTIONS:
        help_text = f"{option.help}; env {option.env}"
        if option.kind == "switch":
            parser.add_argument(
                option.flag,
                dest=option.field,
                default=None,
                action=argparse.BooleanOptionalAction,
                help=help_text,
            )
            continue
        parser.add_argument(
            option.flag, dest=option.field, default=None, metavar=option.metavar, help=help_text
        )
    add_report_api_flags(parser)
    # None means "not given", so that the environment variable applies.
    parser.set_defaults(**{option.field: None for option in _REPORT_OPTIONS})


class Address(BaseModel):
    model_config = ConfigDict(frozen=True)

    host: str
    port: int = Field(ge=0, le=65535)

    @classmethod
    def parse(cls, text: str) -> Address:
        """`:8080` (every interface), `127.0.0.1:0` (any free port), `[::1]:8080`."""
        host, sep, port = text.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError(f"{text!r} is not host:port (e.g. :8080 or 127.0.0.1:8080)")
        return cls(host=host.strip("[]") or "0.0.0.0", port=int(port))


class RunOptions(BaseModel):
    """Validated settings of one spoke controller."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kubeconfig: Path | None = None  # None: the in-cluster service account
    addon_name: str = Field(default=DEFAULT_NAME, pattern=_NAME)
    addon_namespace: str = Field(default=DEFAULT_NAMESPACE, pattern=_LABEL)
    profile: Literal["seed", "acm"] = "seed"
    collectors: tuple[str, ...] | None = None
    config_file: Path | None = None  # resources (health rules), collectorSettings, profile
    degrade_after: Duration | None = None
    recover_after: Duration | None = None
    report_interval: Duration | None = None
    stale_after: Duration | None = None
    history_limit: int | None = None
    metrics_address: Address = Address(host="0.0.0.0", port=8080)
    probe_address: Address = Address(host="0.0.0.0", port=8081)
    request_timeout: float = Field(default=10.0, gt=0)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    # the report API (flags of report_cli.add_report_api_flags)
    report_address: str = ":8090"
    authorization: Path | None = None
    operator_identity: tuple[str, ...] = ()
    collector_identity: tuple[str, ...] = ()
    token_table: Path | None = None
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    insecure: bool = False
    # the hub copy
    hub_kubeconfig: Path | None = None  # None: no replication to the hub
    cluster_name: str | None = Field(default=None, pattern=_LABEL)
    hub_addon_name: str | None = Field(default=None, pattern=_NAME)
    hub_copy: Literal["conditions", "status"] = "conditions"
    hub_resync: Duration = timedelta(minutes=5)
    hub_create_missing: bool = False
    # leader election
    leader_elect: bool = False
    lease_name: str = Field(default=DEFAULT_LEASE, pattern=_NAME)
    lease_namespace: str | None = Field(default=None, pattern=_LABEL)
    lease_duration: Duration = timedelta(seconds=15)
    renew_deadline: Duration = timedelta(seconds=10)
    retry_period: Duration = timedelta(seconds=2)

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
        if not self.lease_duration > self.renew_deadline > self.retry_period > timedelta(0):
            raise OptionsError(
                f"{_names('lease_duration')}, {_names('renew_deadline')}, "
                f"{_names('retry_period')}: need lease duration > renew deadline > retry period > 0"
            )
        return self

    @field_validator("metrics_address", "probe_address", mode="before")
    @classmethod
    def _address(cls, value: Any) -> Any:
        return Address.parse(value) if isinstance(value, str) else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @classmethod
    def from_args(cls, args: argparse.Namespace, environ: Mapping[str, str]) -> RunOptions:
        """Flags over `ADDON_STATUS_*` over defaults; raises OptionsError naming the option."""
        raw: dict[str, Any] = {}
        for option in (*_OPTIONS, *_REPORT_OPTIONS):
            value = getattr(args, option.field, None)
            if value is None or value == []:
                value = environ.get(option.env) or None
            if value is not None:
                raw[option.field] = value
        if "kubeconfig" not in raw:
            raw["kubeconfig"] = _default_kubeconfig(environ)
        try:
            options = cls.model_validate(raw)
        except ValidationError as error:
            raise OptionsError(_first_problem(error)) from None
        options.check_kubeconfig()
        options.config()  # the collectors and timings fit together
        return options

    def check_kubeconfig(self) -> None:
        for path in (self.kubeconfig, self.hub_kubeconfig):
            if path is not None and not path.is_file():
                raise OptionsError(f"kubeconfig {path}: no such file")

    @property
    def ref(self) -> AddonRef:
        return AddonRef(self.addon_namespace, self.addon_name)

    @property
    def hub_ref(self) -> AddonRef | None:
        """The hub copy of the addon CR (namespace: the cluster's name); None without a name."""
        if self.cluster_name is None:
            return None
        return AddonRef(self.cluster_name, self.hub_addon_name or self.addon_name)

    @property
    def lease_ref(self) -> AddonRef:
        """The Lease of leader election (an `AddonRef` is any namespaced name)."""
        return AddonRef(self.lease_namespace or self.addon_namespace, self.lease_name)

    def report_args(self) -> argparse.Namespace:
        """The report API's settings as `report_cli.build_report_server` reads them."""
        return argparse.Namespace(
            **{o.field: getattr(self, o.field) for o in _REPORT_OPTIONS},
        )

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
            raise OptionsError(_first_problem(error)) from None
        except ConfigError as error:
            raise OptionsError(f"--collectors / {ENV_PREFIX}COLLECTORS: {error}") from error
        if self.config_file is None:
            return config
        try:
            text = self.config_file.read_text(encoding="utf-8")
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


def _default_kubeconfig(environ: Mapping[str, str]) -> Path | None:
    """`KUBECONFIG`, else in-cluster when in a pod, else `~/.kube/config`, as kubectl does."""
    if environ.get("KUBECONFIG"):
        return Path(environ["KUBECONFIG"].split(":")[0])
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    home = environ.get("HOME")
    if home and (Path(home) / ".kube" / "config").is_file():
        return Path(home) / ".kube" / "config"
    raise OptionsError(
        f"no kubeconfig: pass --kubeconfig (or set {ENV_PREFIX}KUBECONFIG or KUBECONFIG), "
        "or run in a pod of the cluster"
    )


_BY_FIELD = {o.field: o for o in (*_OPTIONS, *_REPORT_OPTIONS)}


def _names(field: str) -> str:
    return _BY_FIELD[field].names


_BY_SETTING = {
    "degradeAfter": "degrade_after",
    "recoverAfter": "recover_after",
    "reportInterval": "report_interval",
    "staleAfter": "stale_after",
    "historyLimit": "history_limit",
}


def _first_problem(error: ValidationError) -> str:
    """The first problem, named by its flag and variable: `--x / ADDON_STATUS_X: problem`."""
    detail = error.errors()[0]
    loc = [str(p) for p in detail["loc"]]
    field = _BY_SETTING.get(loc[0], loc[0]) if loc else ""
    message = str(detail["msg"]).removeprefix("Value error, ")
    option = _BY_FIELD.get(field)
    if option is None:  # a rule over several timings, e.g. a non-positive staleAfter
        return f"timing settings: {message}"
    value = detail.get("input")
    quoted = isinstance(value, str) and repr(value) not in message and option.field != "kubeconfig"
    shown = f" {value!r}:" if quoted else ""
    return f"{option.names}:{shown} {message}"
