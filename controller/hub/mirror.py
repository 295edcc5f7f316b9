"""What the hub side writes on a cluster's `ManagedClusterAddOn` (docs/spec.md §12): the
standard conditions of the cluster's hub copy, as they are, and nothing else.

Pure rules, no I/O: `mirror(hub copy conditions, ManagedClusterAddOn conditions)` is the
conditions to write, or None when the `ManagedClusterAddOn` already says the same.

- The standard types are those of either profile: `Available`, `Progressing`, `Degraded`, and
  the seed profile's `Disabled` and `NotSupported` (the `acm` profile writes those as
  `Degraded=True` with that reason). Whatever of them the hub copy carries is mirrored; any
  other type on the hub copy (a collector's, another writer's) is not.
- A mirrored condition is the hub copy's type, status, reason, message and
  `lastTransitionTime`, verbatim: a reason or message change with the same status is mirrored
  too (upstream mirrors only a change of status, so the console kept showing an old reason).
- Every other condition of the `ManagedClusterAddOn` belongs to another writer (the addon
  manager's `ManifestApplied`, `RegistrationApplied`, ...) and stays as it is, in its place; a
  standard type the hub copy does not carry is left alone as well (it is not ours to remove).
- A hub copy condition the `ManagedClusterAddOn` schema would refuse (no reason, no transition
  time, a status other than True/False/Unknown) is not mirrored: one bad condition must not
  make every write of that cluster fail with 422.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from controller.kube.api import ApiResource
from statemachines.conditions import STANDARD_TYPES, ConditionStatus, standard_true_in

__all__ = [
    "CLUSTER_STATES",
    "MANAGED_CLUSTER_ADDON",
    "cluster_state",
    "managed_cluster_addon",
    "mirror",
    "standard_conditions",
]

MANAGED_CLUSTER_ADDON: Final = ApiResource(
    "addon.open-cluster-management.io", "v1alpha1", "managedclusteraddons", "ManagedClusterAddOn"
)
CLUSTER_STATES: Final = (*STANDARD_TYPES, "Unknown")
"""A cluster's state: the standard type its hub copy says is True; `Unknown` when none is."""
_FIELDS: Final = ("type", "status", "reason", "message", "lastTransitionTime")
_STATUSES: Final = frozenset(ConditionStatus)

Condition = dict[str, Any]


def standard_conditions(hub_conditions: Sequence[Mapping[str, Any]]) -> list[Condition]:
    """The hub copy's standard conditions that a `ManagedClusterAddOn` accepts, reduced to the
    fields it mirrors, in the hub copy's order (the first of a type wins, as in a map list)."""
    found: dict[str, Condition] = {}
    for condition in hub_conditions:
        if not isinstance(condition, Mapping):
            continue
        kind = condition.get("type")
        if kind not in STANDARD_TYPES or kind in found:
            continue
        if condition.get("status") not in _STATUSES:
            continue
        if not condition.get("reason") or not condition.get("lastTransitionTime"):
            continue
        mirrored = {field: condition.get(field) for field in _FIELDS}
        mirrored["message"] = str(condition.get("message") or "")
        found[str(kind)] = mirrored
    return list(found.values())


def mirror(
    hub_conditions: Sequence[Mapping[str, Any]],
    addon_conditions: Sequence[Mapping[str, Any]],
) -> list[Condition] | None:
    """The `ManagedClusterAddOn`'s new conditions, or None when nothing needs writing: each
    standard condition of the hub copy replaces the one of its type in place (or is appended),
    every other condition is kept as it is."""
    wanted = {c["type"]: c for c in standard_conditions(hub_conditions)}
    if not wanted:
        return None
    result: list[Condition] = []
    for condition in addon_conditions:
        kind = condition.get("type") if isinstance(condition, Mapping) else None
        if isinstance(kind, str) and kind in wanted:
            result.append(wanted.pop(kind))
        else:
            result.append(dict(condition))
    result.extend(wanted.values())
    return None if result == [dict(c) for c in addon_conditions] else result


def cluster_state(hub_conditions: Sequence[Mapping[str, Any]]) -> str:
    """The standard type the hub copy says is True (`Unknown`: none, or a copy not yet
    written)."""
    true = standard_true_in(standard_conditions(hub_conditions))
    return str(true[0]["type"]) if true else "Unknown"


def managed_cluster_addon(namespace: str, name: str = "observability-controller") -> Condition:
    """A `ManagedClusterAddOn` to create (what OCM's addon manager or an admin does when the
    addon is enabled for a cluster): for the demo and tests; the hub side never creates one."""
    return {
        "apiVersion": MANAGED_CLUSTER_ADDON.api_version,
        "kind": MANAGED_CLUSTER_ADDON.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"installNamespace": "open-cluster-management-addon-observability"},
    }
