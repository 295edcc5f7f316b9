"""`addon-status check hub`, the hub side itself: its Deployment ready, its Lease held, its
last resync recent (the leader keeps it on the Lease: `controller.hub.lease_notes`)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Final

from controller.check.findings import Finding, bad, good
from controller.hub.lease_notes import last_resync
from controller.kube.api import (
    ALL_NAMESPACES,
    LEASE,
    ApiResource,
    Kube,
    KubeError,
    NotFoundError,
    whole,
)
from controller.kube.pager import list_all
from statemachines.object_names import HUB_SIDE

__all__ = ["APPLY", "BESIDE", "DEPLOYMENT", "hub_side_findings"]

DEPLOYMENT: Final = ApiResource("apps", "v1", "deployments", "Deployment")
HUB_SIDE_LABEL: Final = f"app.kubernetes.io/name={HUB_SIDE}"  # its manifests'
APPLY_HUB_SIDE: Final = (
    "kubectl apply -k manifests/hub-controller (manifests/hub-controller-acm on ACM)"
)
APPLY: Final = "kubectl apply -k manifests/ocm (manifests/ocm/acm on ACM)"
BESIDE: Final = {  # the same steps the way beside ACM's observability operator
    APPLY: "kubectl apply -k manifests/ocm/beside",
    APPLY_HUB_SIDE: "kubectl apply -k manifests/hub-controller-beside",
}


def hub_side_findings(
    kube: Kube, hub_side: tuple[str, str] | None, now: datetime
) -> Iterator[Finding | str]:
    """`hub_side` names the namespace and name of its Deployment and Lease; by default, each
    Deployment labelled as its manifests label it (manifests/ocm and manifests/hub-controller
    place it differently)."""
    if hub_side is not None:
        yield f"hub side: {'/'.join(hub_side)}"
        yield from _hub_side(kube, *hub_side, now)
        return
    try:
        found = list_all(
            kube, DEPLOYMENT, ALL_NAMESPACES, keep=whole, label_selector=HUB_SIDE_LABEL
        )
    except KubeError as error:
        yield bad("the hub side's Deployments cannot be listed", str(error))
        return
    if not found.items:
        yield bad(f"the hub side is not installed: no Deployment labelled {HUB_SIDE_LABEL}",
                  APPLY)  # fmt: skip
    for deployment in found.items:
        namespace, name = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        yield f"hub side: {namespace}/{name}"
        yield from _hub_side(kube, namespace, name, now)


def _hub_side(kube: Kube, namespace: str, name: str, now: datetime) -> Iterator[Finding]:
    """The hub side itself: its Deployment ready, its Lease held, its last resync recent (the
    leader keeps it on the Lease: `controller.hub.lease_notes`)."""
    try:
        deployment = kube.get(DEPLOYMENT, namespace, name)
    except NotFoundError:
        yield bad(f"the hub side's Deployment {namespace}/{name} does not exist", APPLY_HUB_SIDE)
        return
    except KubeError as error:
        yield bad(f"the hub side's Deployment {namespace}/{name} cannot be read", str(error))
        return
    status = deployment.get("status") or {}
    wanted = (deployment.get("spec") or {}).get("replicas", 1)
    ready = status.get("readyReplicas") or 0
    if ready:
        yield good(f"the hub side runs: {ready} of {wanted} replicas ready")
    else:
        yield bad(
            f"the hub side has no ready replica (of {wanted})",
            f"kubectl -n {namespace} describe deployment {name}; its pods' logs",
        )
    try:
        lease = kube.get(LEASE, namespace, name)
    except NotFoundError:
        yield bad(
            f"no replica holds the hub side's Lease {namespace}/{name}",
            "the hub side runs with --leader-elect (as manifests/hub-controller does): its logs",
        )
        return
    except KubeError as error:
        yield bad(f"the hub side's Lease {namespace}/{name} cannot be read", str(error))
        return
    spec = lease.get("spec") or {}
    holder = spec.get("holderIdentity") or ""
    renewed = _time(spec.get("renewTime"))
    duration = timedelta(seconds=spec.get("leaseDurationSeconds") or 0)
    if not holder or renewed is None or renewed + duration < now:
        since = f"last renewed {_ago(now, renewed)} by {holder}" if holder else "released"
        yield bad(
            f"no replica holds the hub side's Lease {namespace}/{name} ({since}): nothing "
            "writes the ManagedClusterAddOns",
            f"kubectl -n {namespace} get pods -l app.kubernetes.io/name={name}; their logs",
        )
        return
    yield good(f"{holder} leads (Lease renewed {_ago(now, renewed)})")
    resync = last_resync((lease.get("metadata") or {}).get("annotations") or {})
    if resync is None:
        yield bad(
            "the leader has not noted when it last resynced (it does at the renewal after each "
            "resync, within seconds of leading; a hub side older than 0.2.0 never does)",
            f"check again; if it stays, upgrade the hub side: {APPLY_HUB_SIDE}",
        )
        return
    at, every = resync
    if now - at > timedelta(seconds=2 * every) + duration:
        yield bad(
            f"the leader last resynced {_ago(now, at)} (every {every:.0f}s): its worker is stuck",
            f"kubectl -n {namespace} logs {holder}; deleting that pod hands the Lease over",
        )
    else:
        yield good(f"the leader resynced every cluster {_ago(now, at)} (every {every:.0f}s)")


def _time(value: object) -> datetime | None:
    try:
        moment = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        return None
    return moment if moment is not None and moment.tzinfo is not None else None


def _ago(now: datetime, at: datetime | None) -> str:
    if at is None:
        return "at an unknown time"
    seconds = max(0, round((now - at).total_seconds()))
    return f"{seconds}s ago" if seconds < 120 else f"{seconds // 60}m ago"
