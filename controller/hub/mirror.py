"""What the hub side writes on a cluster's `ManagedClusterAddOn` (docs/spec.md §12.1): the
condition types no controller of Open Cluster Management or ACM writes there, as the cluster's
hub copy says them, and nothing else.

Pure rules, no I/O: `mirror(hub copy conditions, ManagedClusterAddOn conditions)` is the
conditions to write, or None when the `ManagedClusterAddOn` already says the same; `Repairs`
decides whether a difference is written (once per hub copy state after someone else's change).

- The owned types (`OWNED_TYPES`): `Degraded` (both profiles), and the seed profile's
  `Disabled` and `NotSupported` (the `acm` profile writes those as `Degraded=True` with that
  reason). `Available` and `Progressing` belong to OCM's health check and addon manager, and
  `RegistrationApplied`, `ManifestApplied`, `Configured`, ... to OCM as well: never written.
- A mirrored condition is the hub copy's type, status, reason, message and
  `lastTransitionTime`, verbatim: a reason or message change with the same status is mirrored
  too (upstream mirrors only a change of status, so the console kept showing an old reason).
- Every other condition of the `ManagedClusterAddOn` stays as it is, in its place; an owned
  type the hub copy does not carry is left alone as well.
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

from controller.hub.ocm import CLUSTER_LABEL, MANAGED_CLUSTER_ADDON
from controller.hub.path import PATH_REASONS
from statemachines.conditions import (
    MAX_MESSAGE,
    STANDARD_TYPES,
    ConditionStatus,
    parse_time,
    standard_true_in,
)
from statemachines.object_names import ADDON_NAMESPACE, MANAGED_ADDON
from statemachines.size import cut
from statemachines.vocabulary import REASON_PATTERN

__all__ = [
    "CLUSTER_LABEL",
    "CLUSTER_STATES",
    "MANAGED_CLUSTER_ADDON",
    "OWNED_TYPES",
    "ClusterState",
    "Repairs",
    "cluster_namespace",
    "cluster_state",
    "from_newer_copy",
    "managed_cluster_addon",
    "mirror",
    "owned",
    "read_copy",
    "standard_conditions",
]

CLUSTER_STATES: Final = (*STANDARD_TYPES, "Unknown")
"""A cluster's state: the standard type its hub copy says is True; `Unknown` when none is."""
OWNED_TYPES: Final = ("Degraded", "Disabled", "NotSupported")
"""The `ManagedClusterAddOn` condition types the hub side writes; OCM and ACM write none of them."""
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


def owned(conditions: Sequence[Mapping[str, Any]]) -> list[Condition]:
    """The owned conditions of a `ManagedClusterAddOn`, as they are (first of a type wins)."""
    found: dict[str, Condition] = {}
    for condition in conditions:
        kind = condition.get("type") if isinstance(condition, Mapping) else None
        if isinstance(kind, str) and kind in OWNED_TYPES and kind not in found:
            found[kind] = dict(condition)
    return list(found.values())


def mirror(
    hub_conditions: Sequence[Mapping[str, Any]],
    addon_conditions: Sequence[Mapping[str, Any]],
) -> list[Condition] | None:
    """The `ManagedClusterAddOn`'s new conditions, or None when nothing needs writing: each
    owned condition of the hub copy replaces the one of its type in place (or is appended),
    every other condition is kept as it is."""
    wanted = {c["type"]: c for c in standard_conditions(hub_conditions) if c["type"] in OWNED_TYPES}
    if not wanted:
        return None
    result: list[Condition] = []
    seen: set[str] = set()
    for condition in addon_conditions:
        if not isinstance(condition, Mapping):
            continue  # no condition at all: what the schema would refuse is not written back
        kind = condition.get("type")
        if isinstance(kind, str) and kind in OWNED_TYPES:
            if kind in seen:
                continue  # a second entry of an owned type: one per type, as a list map keeps
            seen.add(kind)
            if kind in wanted:
                result.append(wanted.pop(kind))
                continue
        result.append(dict(condition))
    result.extend(wanted.values())
    return None if result == list(addon_conditions) else result


def from_newer_copy(
    hub_conditions: Sequence[Mapping[str, Any]], addon_conditions: Sequence[Mapping[str, Any]]
) -> bool:
    """Whether an owned condition of the `ManagedClusterAddOn` changed later than the same
    type of the hub copy `hub_conditions`: it was written from a newer hub copy (ACM's
    observability operator copies the copy's conditions with their times, and its watch may
    be ahead of the hub side's). An unreadable time proves nothing, and the hub side's own word
    on a broken path (docs/spec.md §12.2) is no copy's."""
    times = {c["type"]: c["lastTransitionTime"] for c in standard_conditions(hub_conditions)}
    for condition in owned(addon_conditions):
        if condition.get("reason") in PATH_REASONS:
            continue  # the hub side's own word on the path, not a copy's
        theirs, ours = condition.get("lastTransitionTime"), times.get(condition["type"])
        if not (isinstance(theirs, str) and isinstance(ours, str)):
            continue
        try:
            if parse_time(theirs) > parse_time(ours):
                return True
        except ValueError:
            continue
    return False


class Repairs:
    """Which differences of one cluster's owned conditions the hub side writes: the first for
    each state of the hub copy (a change of the copy, or a ManagedClusterAddOn that never held
    it), and one repair after someone else changed them; a writer that changes them again is
    not fought (`due` answers False) until the hub copy says something new."""

    def __init__(self) -> None:
        self._written: dict[str, object] = {}  # namespace -> the copy state written last
        self._repaired: dict[str, object] = {}  # namespace -> the copy state repaired once

    def due(self, namespace: str, hub_conditions: Sequence[Mapping[str, Any]]) -> bool:
        """Whether `namespace`'s difference may be written now."""
        state = _state(hub_conditions)
        return self._written.get(namespace) != state or self._repaired.get(namespace) != state

    def wrote(self, namespace: str, hub_conditions: Sequence[Mapping[str, Any]]) -> bool:
        """Remember a successful write; True when it was the repair."""
        state = _state(hub_conditions)
        if self._written.get(namespace) != state:
            self._written[namespace] = state
            self._repaired.pop(namespace, None)
            return False
        self._repaired[namespace] = state
        return True

    def forget(self, namespace: str) -> None:
        self._written.pop(namespace, None)
        self._repaired.pop(namespace, None)


def _state(hub_conditions: Sequence[Mapping[str, Any]]) -> object:
    return tuple(
        tuple(c.get(field) for field in _FIELDS)
        for c in standard_conditions(hub_conditions)
        if c["type"] in OWNED_TYPES
    )


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


def cluster_namespace(cluster: str) -> Condition:
    """A ManagedCluster's namespace on the hub, labelled as OCM's registration labels it: for
    the demo and tests."""
    labels = {CLUSTER_LABEL: cluster}
    return {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": cluster, "labels": labels},
    }


def managed_cluster_addon(namespace: str, name: str = MANAGED_ADDON) -> Condition:
    """A `ManagedClusterAddOn` to create (what OCM's addon manager or an admin does when the
    addon is enabled for a cluster): for the demo and tests; the hub side never creates one."""
    return {
        "apiVersion": MANAGED_CLUSTER_ADDON.api_version,
        "kind": MANAGED_CLUSTER_ADDON.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"installNamespace": ADDON_NAMESPACE},
    }
