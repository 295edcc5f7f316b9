"""Flags, declared once: every command's flags are `Flag`s, added to its parser by `add_flags`,
so that a flag shared by several commands (`--kubeconfig`, `--context`) is one declaration,
every `--help` shows each flag's default, and an old spelling keeps working with a warning.

A process's flag (`run`, `hub`) also reads `ADDON_STATUS_<FLAG>`; a flag wins over its
variable, which wins over the default (`given`). Each process validates what it was given in
one pydantic model (`controller.flags.options.ProcessOptions` and its subclasses), before it
touches the network. A variable for a repeatable flag holds a comma-separated list, one for a
switch `true` or `false`.

Light on purpose: `--help` of every command and `report` import this, never pydantic or the
Kubernetes client.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from statemachines.errors import AddonStatusError
from statemachines.object_names import ACM_MANAGED_ADDON, COPY_NAMES, MANAGED_ADDON

__all__ = [
    "ADDON_KIND",
    "ADDON_KINDS",
    "AGENT_ADDON",
    "CONTEXT",
    "COPY_NAME",
    "ELECTION_FLAGS",
    "ENV_PREFIX",
    "KUBECONFIG",
    "LABEL",
    "MANAGED_ADDON_NAME",
    "NAME",
    "PROCESS_FLAGS",
    "Flag",
    "OptionsError",
    "add_flags",
    "given",
]

ENV_PREFIX = "ADDON_STATUS_"
NAME = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"  # an object's name (DNS subdomain)
LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"  # a namespace's name (DNS label)


class OptionsError(AddonStatusError):
    """A flag or environment variable that cannot be used; one line, no traceback."""


def env_of(flag: str) -> str:
    return ENV_PREFIX + flag.removeprefix("--").replace("-", "_").upper()


@dataclass(frozen=True, slots=True)
class Flag:
    """One flag: the field it sets, its name, help, how it is given, and its default as
    `--help` shows it.

    `default` is argparse's, for a command's flag; a process's flag has none (None: not given,
    so that its variable, then its model's default apply), and its `--help` shows the model's
    (`controller.flags.options.shown_defaults`). `shown` says a default that is not a value
    ("in-cluster, else ..."). `deprecated` are old spellings that still work and warn once."""

    field: str
    flag: str
    help: str
    metavar: str | None = None
    kind: Literal["value", "switch", "list", "toggle", "positional"] = "value"
    group: str | None = None  # the --help section
    default: Any = None
    shown: str | None = None
    choices: Sequence[str] | None = None
    type: Callable[[str], Any] | None = None
    aliases: tuple[str, ...] = ()  # other spellings: -w, -o, --format
    deprecated: tuple[str, ...] = ()
    required: bool = False
    nargs: str | None = None  # a positional's: "?" when it may be left out

    @property
    def env(self) -> str:
        return env_of(self.flag)

    @property
    def names(self) -> str:
        return f"{self.flag} / {self.env}"


KUBECONFIG = Flag(
    "kubeconfig", "--kubeconfig", "the kubeconfig file", "PATH",
    shown="$KUBECONFIG, else ~/.kube/config",
)  # fmt: skip
CONTEXT = Flag(
    "context", "--context", "the kubeconfig's context to use", "NAME", shown="its current one"
)
ADDON_KIND = Flag(
    "addon_kind", "--addon-kind",
    "the addon CR's kind, on the spoke and of its hub copies: ObservabilityAddon (ACM's) or "
    "AddonStatus (the project's own, beside ACM's observability operator)", "KIND",
)  # fmt: skip
"""`--addon-kind`: on the spoke the addon CR's, on the hub its copies'."""
ADDON_KINDS = tuple(COPY_NAMES)  # ACM's first: the default
MANAGED_ADDON_NAME = Flag(
    "addon_name", "--managed-addon",
    "the ManagedClusterAddOn in each cluster namespace the hub side writes: the "
    f"ClusterManagementAddOn's name (on ACM, {ACM_MANAGED_ADDON})", "NAME",
    deprecated=("--addon-name",),
)  # fmt: skip
"""`--managed-addon` of `hub`, `fleet` and `check hub` (`--addon-name` until 0.2.0, which on
`run` names the addon CR: one name, one object)."""
COPY_NAME = Flag(
    "copy_name", "--copy-name",
    "the hub copies: the addon CR of this name in each cluster namespace", "NAME",
)  # fmt: skip
AGENT_ADDON = Flag(
    "agent_addon", "--agent-addon",
    "the ManagedClusterAddOn OCM keeps for the agent itself, whose Available, "
    f"RegistrationApplied and ManifestApplied say whether it runs (on ACM, {MANAGED_ADDON})",
    "NAME", shown="--managed-addon",
)  # fmt: skip
PROCESS_FLAGS = (
    replace(KUBECONFIG, shown="$KUBECONFIG, else in-cluster in a pod, else ~/.kube/config"),
    Flag("metrics_address", "--metrics-address", "host:port of /metrics", "ADDR"),
    Flag("probe_address", "--probe-address", "host:port of /healthz, /readyz", "ADDR"),
    Flag("request_timeout", "--request-timeout", "seconds per API call", "SECONDS"),
    Flag("log_level", "--log-level", "debug, info, warning or error", "LEVEL"),
)  # fmt: skip
"""What every process is told (`--kubeconfig` as every command has it, and in a pod)."""
ELECTION_FLAGS = (
    Flag("leader_elect", "--leader-elect", "elect one leader on a Lease", kind="switch"),
    Flag("lease_name", "--lease-name", "the Lease of the election", "NAME"),
    Flag("lease_namespace", "--lease-namespace", "its namespace", "NS"),
    Flag("lease_duration", "--lease-duration", "a Lease not renewed is free after", "DUR"),
    Flag("renew_deadline", "--renew-deadline", "a leader unable to renew quits", "DUR"),
    Flag("retry_period", "--retry-period", "renew or try to acquire every", "DUR"),
)


class _Deprecated(argparse.Action):
    """An old spelling: sets what the new one sets, and says so once on stderr, as kubectl
    does (`Flag --x has been deprecated, use --y instead`); hidden from `--help`."""

    def __init__(self, option_strings: Sequence[str], dest: str, instead: str, **kw: Any) -> None:
        super().__init__(option_strings, dest, **kw)
        self.instead = instead
        self.warned = False

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        if not self.warned:
            self.warned = True
            print(f"Flag {option_string} has been deprecated, use {self.instead} instead",
                  file=sys.stderr)  # fmt: skip
        setattr(namespace, self.dest, values)


def _help(flag: Flag, shown: Mapping[str, str], variables: bool) -> str:
    default = flag.shown or shown.get(flag.field)
    if default is None and isinstance(flag.default, float):
        default = f"{flag.default:g}"
    elif default is None and flag.default not in (None, [], False, ""):
        default = str(flag.default)
    if default is None:
        default = "off" if flag.kind in ("switch", "toggle") else "none"
    text = flag.help
    if not flag.required:
        text += f" (default: {default})"
    return f"{text}; env {flag.env}" if variables else text


def add_flags(
    parser: argparse.ArgumentParser,
    flags: Iterable[Flag],
    *,
    shown: Mapping[str, str] | None = None,
    variables: bool = True,
) -> None:
    """Each flag, its help showing its default (`shown`, by field: the model's, for a
    process's) and, with `variables`, naming its `ADDON_STATUS_*` variable."""
    groups: dict[str, Any] = {}
    for flag in flags:
        target: Any = parser
        if flag.group is not None:
            target = groups.setdefault(flag.group, parser.add_argument_group(flag.group))
        text = _help(flag, shown or {}, variables)
        if flag.kind == "positional":
            target.add_argument(
                flag.field, metavar=flag.metavar, help=text, nargs=flag.nargs,
                choices=flag.choices, type=flag.type,
            )  # fmt: skip
            continue
        spellings = [
            *(a for a in flag.aliases if not a.startswith("--")), flag.flag,
            *(a for a in flag.aliases if a.startswith("--")),
        ]  # fmt: skip
        if flag.kind == "switch":
            how: dict[str, Any] = {"action": argparse.BooleanOptionalAction}
        elif flag.kind == "toggle":
            how = {"action": "store_true"}
        else:
            how = {"metavar": flag.metavar, "choices": flag.choices, "type": flag.type}
            how["action"] = "append" if flag.kind == "list" else "store"
        default: Any = flag.default  # a process's: None, so that its variable applies
        if default is None and not variables:
            default = {"list": [], "toggle": False}.get(flag.kind)
        target.add_argument(*spellings, dest=flag.field, default=default, help=text,
                            required=flag.required, **how)  # fmt: skip
        for old in flag.deprecated:  # a value's old spelling (no switch or list has one)
            target.add_argument(
                old, dest=flag.field, action=_Deprecated, instead=flag.flag, metavar=flag.metavar,
                help=argparse.SUPPRESS, type=flag.type, choices=flag.choices,
            )  # fmt: skip


def given(
    args: argparse.Namespace, environ: Mapping[str, str], flags: Iterable[Flag]
) -> dict[str, Any]:
    """What the flags and their variables say, by field: a flag over its variable (an old
    spelling's with a warning); neither leaves the field out, for the model's default."""
    raw: dict[str, Any] = {}
    for flag in flags:
        value = getattr(args, flag.field, None)
        if value is None or value == []:
            value = environ.get(flag.env) or None
        for old in (env_of(o) for o in flag.deprecated):
            if value is None and environ.get(old):
                value = environ[old]
                print(f"{old} has been deprecated, use {flag.env} instead", file=sys.stderr)
        if value is not None:
            raw[flag.field] = value
    return raw
