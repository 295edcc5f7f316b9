"""`addon-status check spoke|hub`: each line ✔ or ✘ with what to do; exit 0 when all hold, 1
when one does not, 2 for a bad flag or kubeconfig. Modelled on `flux check`: a preflight before
a rollout and a diagnosis after one."""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_check_parser"]

SUMMARY = "check that a spoke or a hub has what the addon needs, and say what to fix"


def add_check_parser(sub: Any) -> None:
    from controller.spoke.options import add_run_flags

    check = sub.add_parser(
        "check", help=SUMMARY, description=f"{SUMMARY}. Exit 0 when every check holds, 1 when "
        "one does not, 2 for a bad flag or kubeconfig.",
    )  # fmt: skip
    where = check.add_subparsers(dest="where", required=True, metavar="{spoke,hub}")
    spoke = where.add_parser(
        "spoke", help="what `addon-status run` needs, with its flags and identity",
        description="Takes the flags of `addon-status run` (and its ADDON_STATUS_* variables). "
        "In the controller's pod: kubectl exec deploy/addon-status-controller -n NAMESPACE -- "
        "addon-status check spoke --pid 1",
    )  # fmt: skip
    spoke.add_argument(
        "--pid", type=int, metavar="PID",
        help="check with the flags of the `addon-status run` running as PID (1 in its pod); "
        "a flag given here wins",
    )  # fmt: skip
    add_run_flags(spoke)
    spoke.set_defaults(handler=_spoke)
    hub = where.add_parser(
        "hub", help="the fleet rollout on an Open Cluster Management hub",
        description="Check the rollout on a hub: the addon's ClusterManagementAddOn, its "
        "placement, the hub copies' CRD, each cluster's ManagedClusterAddOn and the hub side's "
        "Deployment, Lease and last resync; say what to fix. Exit 0 when every check holds, 1 "
        "when one does not, 2 for a bad flag or kubeconfig.",
        epilog="examples:\n"
        "  addon-status check hub --kubeconfig hub.kubeconfig\n"
        "  addon-status check hub --context hub --hub-side NAMESPACE/addon-status-hub-controller",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    hub.add_argument("--kubeconfig", help="the hub's (default: $KUBECONFIG, then ~/.kube/config)")
    hub.add_argument(
        "--context", metavar="NAME", help="the kubeconfig's context (default: current)"
    )
    hub.add_argument(
        "--addon-name", default="addon-status", metavar="NAME",
        help="the ClusterManagementAddOn (and each cluster's ManagedClusterAddOn) "
        "(default: %(default)s)",
    )  # fmt: skip
    hub.add_argument(
        "--copy-name", default="observability-addon", metavar="NAME",
        help="the hub copies: the ObservabilityAddon of this name in each cluster namespace "
        "(default: %(default)s)",
    )  # fmt: skip
    hub.add_argument(
        "--hub-side", metavar="NAMESPACE/NAME",
        help="the hub side's Deployment and Lease (default: each Deployment labelled "
        "app.kubernetes.io/name=addon-status-hub-controller)",
    )  # fmt: skip
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
    findings = hub_findings(RestKube(connection, request_timeout=30.0), args.addon_name,
                            args.copy_name, hub_side=hub_side)  # fmt: skip
    return 0 if report(findings) else 1
