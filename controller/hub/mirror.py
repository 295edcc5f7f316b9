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
- A hub copy is written by anyone, under whatever schema its hub serves: a hub copy condition
  the `ManagedClusterAddOn` schema would refuse (no reason or one outside its pattern or 1,024
  characters, no RFC 3339 transition time, a status other than True/False/Unknown, a value of
  the wrong kind) is not mirrored, and a message is cut to the schema's 32,768 characters: one
  bad condition must never make every write of that cluster fail with 422. `read_copy` says
  what it left out, for the hub side to tell.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from controller.kube.api import ApiResource
from statemachines.conditions import (
    MAX_MESSAGE,
    STANDARD_TYPES,
    ConditionStatus,
    parse_time,
    standard_true_in,
)
from statemachines.size import cut
from statemachines.vocabulary import REASON_PATTERN

__all__ = [
    "CLUSTER_STATES",
    "MANAGED_CLUSTER_ADDON",
    "ClusterState",
    "cluster_state",
    "managed_cluster_addon",
    "mirror",
    "read_copy",
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


def standard_conditions(hub_conditions: object) -> list[Condition]:
    """The hub copy's standard conditions that a `ManagedClusterAddOn` accepts, reduced to the
    fields it mirrors, in the hub copy's order (the first of a type wins, as in a map list)."""
    return read_copy(hub_conditions)[0]


def read_copy(hub_conditions: object) -> tuple[list[Condition], list[str]]:
    """(the standard conditions a `ManagedClusterAddOn` accepts, what was left out and why)."""
    found: dict[str, Condition] = {}
    problems: list[str] = []
    if not isinstance(hub_conditions, list):
        if hub_conditions is not None:
            problems.append(f"status.conditions is a {type(hub_conditions).__name__}, not a list")
        return [], problems
    for index, condition in enumerate(hub_conditions):
        if not isinstance(condition, Mapping):
            problems.append(f"conditions[{index}] is not an object")
            continue
        kind = condition.get("type")
        if not isinstance(kind, str) or kind not in STANDARD_TYPES or kind in found:
            continue
        problem = _refused(condition)
        if problem is not None:
            problems.append(f"conditions[{index}] ({kind}): {problem}")
            continue
        mirrored = {field: condition.get(field) for field in _FIELDS}
        message = condition.get("message")
        mirrored["message"] = cut(message, MAX_MESSAGE) if isinstance(message, str) else ""
        found[kind] = mirrored
    return list(found.values()), problems


def _refused(condition: Mapping[str, Any]) -> str | None:
    """Why the `ManagedClusterAddOn` schema would refuse `condition`; None when it would not."""
    status, reason, at = (condition.get(k) for k in ("status", "reason", "lastTransitionTime"))
    if not isinstance(status, str) or status not in _STATUSES:
        return f"status {status!r} is not True, False or Unknown"
    if not isinstance(reason, str) or len(reason) > 1024 or not REASON_PATTERN.match(reason):
        return f"reason {str(reason)[:80]!r} is not a reason the schema keeps"
    try:
        parse_time(at) if isinstance(at, str) else None
    except ValueError:
        at = None
    if not isinstance(at, str):
        return "lastTransitionTime is not an RFC 3339 time"
    return None


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


@dataclass(frozen=True)
class ClusterState:
    """One cluster as its hub copy says: the standard type that is True (`Unknown`: none, or a
    copy not written yet), that condition's reason, and since when (None: not known)."""

    cluster: str
    type: str
    reason: str
    since: datetime | None


def cluster_state(cluster: str, hub_conditions: Sequence[Mapping[str, Any]]) -> ClusterState:
    """The state of `cluster` from its hub copy's conditions."""
    true = standard_true_in(standard_conditions(hub_conditions))
    if not true:
        return ClusterState(cluster, "Unknown", "", None)
    condition = true[0]
    try:
        since: datetime | None = parse_time(str(condition["lastTransitionTime"]))
    except (KeyError, ValueError):
        since = None  # the state without its time beats no state
    return ClusterState(cluster, str(condition["type"]), str(condition.get("reason") or ""), since)


def managed_cluster_addon(namespace: str, name: str = "observability-controller") -> Condition:
    """A `ManagedClusterAddOn` to create (what OCM's addon manager or an admin does when the
    addon is enabled for a cluster): for the demo and tests; the hub side never creates one."""
    return {
        "apiVersion": MANAGED_CLUSTER_ADDON.api_version,
        "kind": MANAGED_CLUSTER_ADDON.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"installNamespace": "open-cluster-management-addon-observability"},
    }
