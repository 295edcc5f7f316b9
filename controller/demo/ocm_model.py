"""What Open Cluster Management (v1.3) decides, as pure functions over the objects it reads, for
the demo's model of it (`ocm_writers`, `klusterlet`): the kinds, how a condition is set, the
work agent's status feedback of a Deployment, the template health check's `Available` from that
feedback, and when a cluster's lease has expired. The reasons and messages are OCM's own, so
that what the hub side and the console read in the demo is what they read beside OCM.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controller.hub.ocm import MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON
from controller.kube.api import LEASE, ApiResource

__all__ = [
    "LEASE",
    "LEASE_NAME",
    "MANAGED_CLUSTER",
    "MANAGED_CLUSTER_ADDON",
    "MANIFEST_WORK",
    "ROLE_BINDING",
    "Wanted",
    "condition",
    "feedback",
    "lease_expires",
    "probe",
    "set_condition",
    "work_name",
]

Obj = dict[str, Any]
Wanted = tuple[str, str, str, str]  # a condition's type, status, reason, message

MANIFEST_WORK: Final = ApiResource("work.open-cluster-management.io", "v1", "manifestworks",
                                   "ManifestWork")  # fmt: skip
ROLE_BINDING: Final = ApiResource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
LEASE_NAME: Final = "managed-cluster-lease"  # the klusterlet's, in the cluster's namespace
GRACE_LEASES: Final = 5  # the hub calls a cluster lost after this many lease durations
DEFAULT_LEASE_SECONDS: Final = 60
CLUSTER_AVAILABLE: Final = "ManagedClusterConditionAvailable"
# The hub's lease controller, when the klusterlet stopped renewing: on the ManagedCluster, and
# copied as they are onto every ManagedClusterAddOn of that cluster.
CLUSTER_LOST: Final = (CLUSTER_AVAILABLE, "Unknown", "ManagedClusterLeaseUpdateStopped",
                       "Registration agent stopped updating its lease.")  # fmt: skip
_DEPLOYMENT_FEEDBACK: Final = (("ReadyReplicas", "readyReplicas"), ("Replicas", "replicas"),
                               ("AvailableReplicas", "availableReplicas"))  # fmt: skip


def work_name(addon: str) -> str:
    """The addon manager's ManifestWork of an addon's agent, in each cluster's namespace."""
    return f"addon-{addon}-deploy-0"


def condition(conditions: Iterable[Mapping[str, Any]] | None, kind: str) -> Mapping[str, Any]:
    """The condition of type `kind` ({} when there is none)."""
    return next((c for c in conditions or () if c.get("type") == kind), {})


def set_condition(conditions: Sequence[Obj], wanted: Wanted, now: datetime) -> list[Obj]:
    """`conditions` with `wanted` set as meta.SetStatusCondition sets it: the transition time
    moves only with the status; the very list when nothing changes (callers compare)."""
    kind, status, reason, message = wanted
    result = [dict(c) for c in conditions]
    for found in result:
        if found.get("type") != kind:
            continue
        if (found.get("status"), found.get("reason"), found.get("message")) == wanted[1:]:
            return list(conditions)
        if found.get("status") != status:
            found["lastTransitionTime"] = _time(now)
        found.update(status=status, reason=reason, message=message)
        return result
    return [*result, {"type": kind, "status": status, "reason": reason, "message": message,
                      "lastTransitionTime": _time(now)}]  # fmt: skip


def _time(now: datetime) -> str:
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the work agent, on the spoke --------------------------------------------------------------


def feedback(deployment: Mapping[str, Any]) -> list[Obj]:
    """The work agent's well-known status feedback of a Deployment: each of its three counts
    the Deployment's status carries (Kubernetes leaves out a count that is 0, and so does the
    feedback)."""
    status = deployment.get("status") or {}
    return [
        {"name": name, "fieldValue": {"type": "Integer", "integer": status[field]}}
        for name, field in _DEPLOYMENT_FEEDBACK
        if isinstance(status.get(field), int) and status[field] != 0
    ]


def manifest_meta(obj: Mapping[str, Any], ordinal: int, plural: str) -> Obj:
    group, _, version = str(obj.get("apiVersion", "")).rpartition("/")
    meta = obj.get("metadata") or {}
    return {"ordinal": ordinal, "group": group, "version": version, "kind": obj.get("kind", ""),
            "resource": plural, "name": meta.get("name", ""),
            "namespace": meta.get("namespace", "")}  # fmt: skip


# --- the addon manager's health check of a template addon (workload availability) --------------


def probed(manifests: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """The (namespace, name) of each Deployment of the agent the health check probes: every
    one whose spec does not ask for zero replicas."""
    return [
        (str(m["metadata"].get("namespace", "")), str(m["metadata"]["name"]))
        for m in manifests
        if m.get("kind") == "Deployment" and (m.get("spec") or {}).get("replicas", 1) != 0
    ]


def probe(
    addon: str, work: Mapping[str, Any] | None, deployments: Sequence[tuple[str, str]]
) -> Wanted:
    """The MCA's `Available` from the ManifestWork's status feedback of `deployments`."""
    if work is None:
        return ("Available", "Unknown", "WorkNotFound", "Addon manifestWork is not found")
    status = work.get("status") or {}
    available = condition(status.get("conditions"), "Available")
    if not available:
        return ("Available", "Unknown", "WorkNotApplied", "Addon manifestWork is not applied yet")
    if available.get("status") == "False":
        return ("Available", "False", "WorkNotApplied", str(available.get("message", "")))
    found = {
        (m["resourceMeta"].get("namespace", ""), m["resourceMeta"].get("name", "")): values
        for m in (status.get("resourceStatus") or {}).get("manifests") or []
        if m["resourceMeta"].get("resource") == "deployments"
        and (values := (m.get("statusFeedback") or {}).get("values"))
    }
    results = [(key, found[key]) for key in deployments if key in found]
    if not results:
        return ("Available", "Unknown", "NoProbeResult", "Probe results are not returned")
    for (namespace, name), values in results:
        error = _unavailable(namespace, name, values)
        if error:
            return ("Available", "False", "ProbeUnavailable",
                    f"Probe addon unavailable with err {error}")  # fmt: skip
    return ("Available", "True", "ProbeAvailable", f"{addon} add-on is available.")


def _unavailable(namespace: str, name: str, values: Sequence[Mapping[str, Any]]) -> str:
    """Why a Deployment's feedback is not available ("" when it is): at least one ready
    replica, or none wanted."""
    counts = {v.get("name"): (v.get("fieldValue") or {}).get("integer") for v in values}
    ready, desired = counts.get("ReadyReplicas"), counts.get("Replicas")
    if ready is None:
        return "readyReplica is not probed"
    if desired is None:
        return "desiredNumberReplicas is not probed"
    if desired == 0 or ready >= 1:
        return ""
    return (f"desiredNumberReplicas is {desired} but readyReplica is {ready} for deployments "
            f"{namespace}/{name}")  # fmt: skip


# --- the hub's lease controller -----------------------------------------------------------------


def lease_expires(lease: Mapping[str, Any], cluster: Mapping[str, Any]) -> datetime | None:
    """When the hub calls the cluster lost: its lease's last renewal plus five lease durations
    (None: the lease was never renewed)."""
    renewed = (lease.get("spec") or {}).get("renewTime")
    if not isinstance(renewed, str):
        return None
    seconds = (cluster.get("spec") or {}).get("leaseDurationSeconds") or DEFAULT_LEASE_SECONDS
    when = datetime.fromisoformat(renewed.replace("Z", "+00:00"))
    return when + timedelta(seconds=GRACE_LEASES * int(seconds))


def micro_time(now: datetime) -> str:
    """A Lease's renewTime as Kubernetes writes it (MicroTime)."""
    return now.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
