"""The flags of `addon-status hub`, apart from the wiring so that `--help` loads no client."""

from __future__ import annotations

import argparse
import os

__all__ = ["add_hub_flags"]


def _seconds(text: str) -> float:
    try:
        value = float(text.removesuffix("s"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be more than 0 seconds")
    return value


def add_hub_flags(parser: argparse.ArgumentParser) -> None:
    """Flags only (the pod gives POD_NAME and POD_NAMESPACE through the downward API)."""
    add = parser.add_argument
    add("--kubeconfig", default=None, metavar="PATH",
        help="the hub's kubeconfig (default: the pod's service account)")
    add("--addon-name", default="observability-controller", metavar="NAME",
        help="the ManagedClusterAddOn in each cluster namespace (the addon's registration name)")
    add("--copy-name", default="observability-addon", metavar="NAME",
        help="the hub copies: the ObservabilityAddon of this name in each cluster namespace")
    add("--namespace-selector", default="", metavar="SELECTOR",
        help="only cluster namespaces with these labels (e.g. env=prod); needs `list "
             "namespaces` (manifests/hub-controller/namespace-selector)")
    add("--resync", type=_seconds, default=300.0, metavar="SECONDS",
        help="re-read every ManagedClusterAddOn and repair it this often (300)")
    add("--leader-elect", action=argparse.BooleanOptionalAction, default=False,
        help="campaign for a Lease; only the leader writes (for two replicas)")
    add("--lease-name", default="addon-status-hub-controller", metavar="NAME")
    add("--lease-namespace", default=os.environ.get("POD_NAMESPACE") or "default",
        metavar="NS", help="default: $POD_NAMESPACE, else default")
    add("--lease-duration", type=_seconds, default=15.0, metavar="SECONDS")
    add("--renew-deadline", type=_seconds, default=10.0, metavar="SECONDS")
    add("--retry-period", type=_seconds, default=2.0, metavar="SECONDS")
    add("--metrics-address", default=":8080", metavar="HOST:PORT")
    add("--probe-address", default=":8081", metavar="HOST:PORT")
    add("--request-timeout", type=_seconds, default=10.0, metavar="SECONDS")
    add("--log-level", choices=["debug", "info", "warning", "error"], default="info")
