"""What the flags of a process say, validated: `ProcessOptions` (every process's: its API
server, where it serves metrics and probes, the election), which `run` and `hub` extend. A
mistake is one line naming the flag and the variable (`--degrade-after /
ADDON_STATUS_DEGRADE_AFTER: 'soon' is not a duration ...`), so a misconfigured Deployment says
why in its first log line instead of a traceback. The flags themselves: `controller.flags`.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from controller.flags import (
    ELECTION_FLAGS,
    ENV_PREFIX,
    LABEL,
    NAME,
    PROCESS_FLAGS,
    Flag,
    OptionsError,
    given,
)
from statemachines.object_names import COPY_NAMES, MANAGED_ADDON
from statemachines.settings import Duration, format_duration

__all__ = [
    "Address",
    "OptionsError",
    "ProcessOptions",
    "default_kubeconfig",
    "first_problem",
    "named_after_kind",
    "shown",
    "shown_defaults",
]


def first_problem(
    error: ValidationError, flags: Sequence[Flag], *, aliases: Mapping[str, str] | None = None
) -> str:
    """The first problem, named by its flag and variable: `--x / ADDON_STATUS_X: problem`.
    `aliases` maps a nested model's names to fields (`degradeAfter` -> `degrade_after`)."""
    detail = error.errors()[0]
    loc = [str(p) for p in detail["loc"]]
    field = (aliases or {}).get(loc[0], loc[0]) if loc else ""
    message = str(detail["msg"]).removeprefix("Value error, ")
    flag = next((f for f in flags if f.field == field), None)
    if flag is None:  # a rule over several fields
        return message
    value = detail.get("input")
    quoted = isinstance(value, str) and repr(value) not in message and field != "kubeconfig"
    shown = f" {value!r}:" if quoted else ""
    return f"{flag.names}:{shown} {message}"


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

    def url(self, port: int | None = None) -> str:
        """`http://host:port` to reach it from this machine (port: the one it listens on)."""
        host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(self.host, self.host)
        where = port if port is not None else self.port
        return f"http://[{host}]:{where}" if ":" in host else f"http://{host}:{where}"


class ProcessOptions(BaseModel):
    """What every process is told: its API server, where it serves metrics and probes, and
    whether and how it elects a leader (`PROCESS_FLAGS`, `ELECTION_FLAGS`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    FLAGS: ClassVar[tuple[Flag, ...]] = (*PROCESS_FLAGS, *ELECTION_FLAGS)

    kubeconfig: Path | tuple[Path, ...] | None = None  # KUBECONFIG's files; None: in-cluster
    metrics_address: Address = Address(host="0.0.0.0", port=8080)
    probe_address: Address = Address(host="0.0.0.0", port=8081)
    request_timeout: float = Field(default=10.0, gt=0)
    log_level: Literal["debug", "info", "warning", "error"] = "info"
    leader_elect: bool = False
    lease_name: str = Field(default=MANAGED_ADDON, pattern=NAME)
    lease_namespace: str | None = Field(default=None, pattern=LABEL)
    lease_duration: Duration = timedelta(seconds=15)
    renew_deadline: Duration = timedelta(seconds=10)
    retry_period: Duration = timedelta(seconds=2)

    @field_validator("metrics_address", "probe_address", mode="before")
    @classmethod
    def _address(cls, value: Any) -> Any:
        return Address.parse(value) if isinstance(value, str) else value

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _election_timings(self) -> ProcessOptions:
        if not self.lease_duration > self.renew_deadline > self.retry_period > timedelta(0):
            names = ", ".join(f.names for f in ELECTION_FLAGS[3:])
            raise OptionsError(f"{names}: need lease duration > renew deadline > retry period > 0")
        return self

    @classmethod
    def from_args(cls, args: argparse.Namespace, environ: Mapping[str, str]) -> Self:
        """Flags over `ADDON_STATUS_*` over defaults, every flag checked before the kubeconfig
        is looked for; raises OptionsError naming the option."""
        raw = given(args, environ, cls.FLAGS)
        try:
            options = cls.model_validate(raw)
        except ValidationError as error:
            raise OptionsError(cls.problem(error)) from None
        if "kubeconfig" not in raw:
            options = options.model_copy(update={"kubeconfig": default_kubeconfig(environ)})
        options.check()
        return options

    @classmethod
    def problem(cls, error: ValidationError) -> str:
        """The first problem of `error`, named by its flag."""
        return first_problem(error, cls.FLAGS)

    def check(self) -> None:
        """What needs the file system: the kubeconfig exists."""
        files = (self.kubeconfig,) if isinstance(self.kubeconfig, Path) else self.kubeconfig
        if files and not any(path.is_file() for path in files):
            where = os.pathsep.join(map(str, files))
            raise OptionsError(f"kubeconfig {where}: no such file")


def default_kubeconfig(environ: Mapping[str, str]) -> Path | tuple[Path, ...] | None:
    """`KUBECONFIG` (its files merged, as kubectl merges them), else in-cluster when in a pod,
    else `~/.kube/config`, as kubectl does."""
    from controller.kube.kubeconfig import kubeconfig_files  # the seam only where it is needed

    files = kubeconfig_files(environ.get("KUBECONFIG", ""))
    if files:
        return files[0] if len(files) == 1 else files
    if environ.get("KUBERNETES_SERVICE_HOST"):
        return None
    home = environ.get("HOME")
    if home and (Path(home) / ".kube" / "config").is_file():
        return Path(home) / ".kube" / "config"
    raise OptionsError(
        f"no kubeconfig: pass --kubeconfig (or set {ENV_PREFIX}KUBECONFIG or KUBECONFIG), "
        "or run in a pod of the cluster"
    )


def named_after_kind(data: Any, field: str) -> Any:
    """`data` with `field`, the addon CR's name, defaulted to the one that goes with its
    `addon_kind` (`COPY_NAMES`: observability-addon, or addon-status for the own kind), as
    `fleet` and `check hub` default it; given, it stays."""
    if isinstance(data, dict) and data.get(field) is None:
        kind = data.get("addon_kind") or "ObservabilityAddon"
        if kind in COPY_NAMES:  # another is refused by the kind's own validation
            return {**data, field: COPY_NAMES[kind]}
    return data


def shown(value: Any) -> str:
    """A default as `--help` shows it: `10m`, `:8080`, `off`, `none`."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, Address):
        return f"{'' if value.host == '0.0.0.0' else value.host}:{value.port}"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if value not in (None, "", ()) else "none"


def shown_defaults(model: type[BaseModel]) -> dict[str, str]:
    """Each field's default, as `--help` shows it: declared once, in the model."""
    return {
        name: shown(field.default)
        for name, field in model.model_fields.items()
        if field.default_factory is None and not field.is_required()
    }
