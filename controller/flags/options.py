"""Flags, declared once: every flag of `run` and `hub` with its `ADDON_STATUS_*` variable, and
what both processes share (where they listen, the API server, the election).

A flag wins over its environment variable, which wins over the default. Each process validates
what it was given in one pydantic model (`ProcessOptions` and its subclasses), before it touches
the network; a mistake is one line naming the flag and the variable (`--degrade-after /
ADDON_STATUS_DEGRADE_AFTER: 'soon' is not a duration ...`), so a misconfigured Deployment says
why in its first log line instead of a traceback. A variable for a repeatable flag holds a
comma-separated list, one for a switch `true` or `false`.

Light on purpose: `--help` of every command imports this, never the Kubernetes client.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from statemachines.errors import AddonStatusError
from statemachines.settings import Duration

__all__ = [
    "ELECTION_FLAGS",
    "ENV_PREFIX",
    "PROCESS_FLAGS",
    "Address",
    "Flag",
    "OptionsError",
    "ProcessOptions",
    "add_flags",
    "default_kubeconfig",
    "first_problem",
    "given",
]

ENV_PREFIX = "ADDON_STATUS_"
NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"  # an object's name (DNS subdomain)
LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a namespace's name (DNS label)


class OptionsError(AddonStatusError):
    """A flag or environment variable that cannot be used; one line, no traceback."""


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag: the option field it sets, its name, help, and how it is given."""

    field: str
    flag: str
    help: str
    metavar: str | None = None
    kind: Literal["value", "switch", "list"] = "value"
    group: str | None = None  # the --help section

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.flag.removeprefix("--").replace("-", "_").upper()

    @property
    def names(self) -> str:
        return f"{self.flag} / {self.env}"


PROCESS_FLAGS = (
    Flag("kubeconfig", "--kubeconfig", "kubeconfig (default: in-cluster, else KUBECONFIG)", "PATH"),
    Flag("metrics_address", "--metrics-address", "host:port of /metrics (:8080)", "ADDR"),
    Flag("probe_address", "--probe-address", "host:port of /healthz, /readyz (:8081)", "ADDR"),
    Flag("request_timeout", "--request-timeout", "seconds per API call (10)", "SECONDS"),
    Flag("log_level", "--log-level", "debug, info, warning or error (info)", "LEVEL"),
)
ELECTION_FLAGS = (
    Flag("leader_elect", "--leader-elect", "elect one leader on a Lease (off)", kind="switch"),
    Flag("lease_name", "--lease-name", "the Lease of the election", "NAME"),
    Flag("lease_namespace", "--lease-namespace", "its namespace", "NS"),
    Flag("lease_duration", "--lease-duration", "a Lease not renewed is free after (15s)", "DUR"),
    Flag("renew_deadline", "--renew-deadline", "a leader unable to renew quits (10s)", "DUR"),
    Flag("retry_period", "--retry-period", "renew or try to acquire every (2s)", "DUR"),
)


def add_flags(parser: argparse.ArgumentParser, flags: Iterable[Flag]) -> None:
    """Each flag, its help naming its variable; None means "not given", so that the variable
    applies."""
    groups: dict[str, Any] = {}
    for flag in flags:
        target: Any = parser
        if flag.group is not None:
            target = groups.setdefault(flag.group, parser.add_argument_group(flag.group))
        text = f"{flag.help}; env {flag.env}"
        if flag.kind == "switch":
            target.add_argument(
                flag.flag, dest=flag.field, default=None, help=text,
                action=argparse.BooleanOptionalAction,
            )  # fmt: skip
        elif flag.kind == "list":
            target.add_argument(
                flag.flag, dest=flag.field, default=None, metavar=flag.metavar, help=text,
                action="append",
            )  # fmt: skip
        else:
            target.add_argument(
                flag.flag, dest=flag.field, default=None, metavar=flag.metavar, help=text
            )


def given(
    args: argparse.Namespace, environ: Mapping[str, str], flags: Iterable[Flag]
) -> dict[str, Any]:
    """What the flags and their variables say, by field: a flag over its variable; neither
    leaves the field out, for the model's default."""
    raw: dict[str, Any] = {}
    for flag in flags:
        value = getattr(args, flag.field, None)
        if value is None or value == []:
            value = environ.get(flag.env) or None
        if value is not None:
            raw[flag.field] = value
    return raw


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
    lease_name: str = Field(default="addon-status", pattern=NAME)
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
