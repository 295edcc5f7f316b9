"""`addon-status check spoke|hub`: each line ✔ or ✘ with what to do; exit 0 when all hold, 1
when one does not, 2 for a bad flag or kubeconfig. Modelled on `flux check`: a preflight before
a rollout and a diagnosis after one."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from controller.check.hub_side import HUB_SIDE_LABEL
from controller.flags import (
    ADDON_KIND,
    ADDON_KINDS,
    CONTEXT,
    COPY_NAME,
    KUBECONFIG,
    MANAGED_ADDON_NAME,
    Flag,
    add_flags,
)
from statemachines.object_names import COPY_NAMES, MANAGED_ADDON, SHOWN_COPY_NAME

__all__ = ["add_check_parser"]

SUMMARY = "check that a spoke or a hub has what the addon needs, and say what to fix"


PID = Flag(
    "pid", "--pid", "check with the flags of the `addon-status run` running as PID (1 in its "
    "pod); a flag given here wins", "PID", type=int, shown="the flags given here",
)  # fmt: skip
HUB_SIDE_FLAG = Flag(
    "hub_side", "--hub-side", "the hub side's Deployment and Lease", "NAMESPACE/NAME",
    shown=f"each Deployment labelled {HUB_SIDE_LABEL}",
)  # fmt: skip
CHECK_HUB_FLAGS = (
    KUBECONFIG,
    CONTEXT,
    replace(MANAGED_ADDON_NAME, default=MANAGED_ADDON,
            help="the ClusterManagementAddOn, and each cluster's ManagedClusterAddOn"),
    replace(ADDON_KIND, choices=ADDON_KINDS, default=ADDON_KINDS[0],
            help=ADDON_KIND.help.replace("the addon CR's kind, on the spoke and of its hub "
                                         "copies", "the hub copies' kind")),
    replace(COPY_NAME, shown=SHOWN_COPY_NAME),
    HUB_SIDE_FLAG,
)  # fmt: skip
_SPOKE_EXAMPLES = """examples:
  addon-status check spoke --kubeconfig spoke.kubeconfig
  addon-status check spoke --addon-kind AddonStatus --addon-name addon-status
  kubectl exec deploy/addon-status-controller -n NAMESPACE -- addon-status check spoke --pid 1"""
_HUB_EXAMPLES = """examples:
  addon-status check hub --kubeconfig hub.kubeconfig
  addon-status check hub --context hub --hub-side NAMESPACE/addon-status-hub-controller
  addon-status check hub --addon-kind AddonStatus    # beside ACM's observability operator"""


def add_check_parser(sub: Any) -> None:
    from controller.spoke.options import add_run_flags

    check = sub.add_parser(
        "check", help=SUMMARY, description=f"{SUMMARY}. Exit 0 when every check holds, 1 when "
        "one does not, 2 for a bad flag or kubeconfig.",
        epilog=f"{_SPOKE_EXAMPLES}\n{_HUB_EXAMPLES.removeprefix('examples:')}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    where = check.add_subparsers(dest="where", required=True, metavar="{spoke,hub}")
    spoke = where.add_parser(
        "spoke", help="what `addon-status run` needs, with its flags and identity",
        description="Check what `addon-status run` needs on a spoke: the addon CR, its "
        "permissions, the report API's certificate, the hub copy; say what to fix. Takes the "
        "flags of `addon-status run` (and its ADDON_STATUS_* variables). Exit 0 when every "
        "check holds, 1 when one does not, 2 for a bad flag or kubeconfig.",
        epilog=_SPOKE_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_flags(spoke, (PID,), variables=False)
    add_run_flags(spoke)
    spoke.set_defaults(handler=_spoke)
    hub = where.add_parser(
        "hub", help="the fleet rollout on an Open Cluster Management hub",
        description="Check the rollout on a hub: the addon's ClusterManagementAddOn, its "
        "placement, the hub copies' CRD, each cluster's ManagedClusterAddOn and the hub side's "
        "Deployment, Lease and last resync; say what to fix. Exit 0 when every check holds, 1 "
        "when one does not, 2 for a bad flag or kubeconfig.",
        epilog=_HUB_EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_flags(hub, CHECK_HUB_FLAGS, variables=False)
    hub.set_defaults(handler=_hub)


def run_args(pid: int, proc: Path = Path("/proc")) -> list[str]:
    """The flags of the `addon-status run` running as `pid`; OSError or ValueError when it is
    not one."""
    words = (proc / str(pid) / "cmdline").read_bytes().decode().split("\0")
    if "run" not in words:
        raise ValueError(f"process {pid} is not `addon-status run`: {' '.join(words[:2])}")
    return [w for w in words[words.index("run") + 1 :] if w]


def _spoke(args: argparse.Namespace) -> int:
    from controller.check.findings import report
    from controller.check.spoke import spoke_findings
    from controller.kube.kubeconfig import client_for
    from controller.spoke.options import RUN_FLAGS, OptionsError, RunOptions, add_run_flags

    if args.pid is not None:
        try:
            words = run_args(args.pid)
        except (OSError, ValueError) as error:
            print(f"addon-status check spoke: --pid {args.pid}: {error}", file=sys.stderr)
            return 2
        parser = argparse.ArgumentParser(prog="addon-status run")
        add_run_flags(parser)
        running = parser.parse_args(words)
        for flag in RUN_FLAGS:  # a flag given here wins over the process's
            if getattr(args, flag.field) not in (None, []):
                setattr(running, flag.field, getattr(args, flag.field))
        args = running
    try:
        options = RunOptions.from_args(args, os.environ)
    except OptionsError as error:
        print(f"addon-status check spoke: {error}", file=sys.stderr)
        return 2
    findings = spoke_findings(options, client_for, dt.datetime.now(dt.UTC))
    return 0 if report(findings) else 1


def _hub(args: argparse.Namespace) -> int:
    from controller.check.findings import report
    from controller.check.hub import hub_findings
    from controller.kube.api import ADDON_KINDS
    from controller.kube.kubeconfig import KubeconfigError, KubeconfigSource, kubeconfig_path
    from controller.kube.rest import RestKube

    try:
        connection = KubeconfigSource(kubeconfig_path(args.kubeconfig), args.context).current()
    except KubeconfigError as error:
        print(f"addon-status check hub: {error}", file=sys.stderr)
        return 2
    hub_side = None
    if args.hub_side is not None:
        namespace, _, name = args.hub_side.partition("/")
        if not (namespace and name) or "/" in name:
            print(f"addon-status check hub: --hub-side {args.hub_side!r}: want NAMESPACE/NAME",
                  file=sys.stderr)  # fmt: skip
            return 2
        hub_side = (namespace, name)
    findings = hub_findings(
        RestKube(connection, request_timeout=30.0), args.addon_name,
        args.copy_name or COPY_NAMES[args.addon_kind], kind=ADDON_KINDS[args.addon_kind],
        hub_side=hub_side,
    )  # fmt: skip
    return 0 if report(findings) else 1
