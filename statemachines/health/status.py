"""What health rules write: `status.resources[]` and the addon's `ResourcesHealthy` condition.

`status.resources[]` holds one entry per configured resource in configuration order:
`{name, object: {apiVersion, kind, namespace, name}, conditions: [{type: Healthy, status,
reason, message, lastTransitionTime}], pending}` — the counted health, and the pending result
with its exact start (microseconds kept) so that a restart resumes the `for` where it stopped.
`resources_from_api` reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from statemachines.conditions import Condition, format_time, transition_time
from statemachines.health.counted import CountedHealth, Pending
from statemachines.health.resources import MAX_RESOURCES, Resource
from statemachines.health.vocabulary import (
    HEALTHY,
    HEALTHY_CONDITION_RULE,
    RESOURCES_HEALTHY,
    Health,
)
from statemachines.readback import Reader
from statemachines.size import ADDON_MESSAGE, RESOURCE_MESSAGE, cut

__all__ = [
    "not_healthy",
    "resources_from_api",
    "resources_healthy",
    "resources_to_api",
]

_NEVER_OBSERVED = "not observed yet"


def resources_to_api(
    resources: Sequence[Resource], counted: Mapping[str, CountedHealth]
) -> list[dict[str, Any]]:
    """`status.resources[]`; a resource with no entry in `counted` (not started) has no
    condition."""
    return [_entry(r, counted.get(r.name)) for r in resources]


def _entry(resource: Resource, counted: CountedHealth | None) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": resource.name, "object": resource.object.to_api()}
    if counted is None:
        entry["conditions"] = []
        return entry
    condition = {
        "type": HEALTHY,
        "status": counted.health.condition_status.value,
        "reason": counted.reason,
        "message": counted.message,
        "lastTransitionTime": format_time(counted.since),
    }
    entry["conditions"] = [condition]
    if counted.pending is not None:
        entry["pending"] = {
            "status": counted.pending.health.condition_status.value,
            "reason": counted.pending.reason,
            "message": counted.pending.message,
            "since": counted.pending.since.isoformat().replace("+00:00", "Z"),
        }
    return entry


def resources_from_api(
    raw: object, resources: Sequence[Resource], read: Reader
) -> dict[str, CountedHealth]:
    """The counted health stored in `status.resources`, for the configured resources.

    An entry of a resource no longer configured is dropped; a configured one absent, or with no
    condition, has no entry. A field outside the rules' bounds leaves its entry (or only its
    pending result) absent, noted by `read` (docs/spec.md §6).
    """
    configured = {r.name for r in resources}
    counted: dict[str, CountedHealth] = {}
    for index, item in enumerate(read.items(raw, "status.resources", limit=MAX_RESOURCES)):
        where = f"status.resources[{index}]"
        entry = read.mapping(item, where)
        if entry is None or not isinstance(entry.get("name"), str):
            read.ignore(where, "expected an object with a name")
        elif entry["name"] in configured and entry.get("conditions"):
            found = _counted_from_api(read, where, entry)
            if found is not None:
                counted[entry["name"]] = found
    return counted


def _counted_from_api(read: Reader, where: str, item: dict[str, Any]) -> CountedHealth | None:
    conditions = read.items(item.get("conditions"), f"{where}.conditions", limit=1)
    condition = read.mapping(conditions[0], f"{where}.conditions[0]") if conditions else None
    if condition is None or condition.get("type") != HEALTHY:
        read.ignore(f"{where}.conditions", f"expected one condition {HEALTHY}")
        return None
    at = f"{where}.conditions[0]"
    since = read.time(condition.get("lastTransitionTime"), f"{at}.lastTransitionTime")
    try:
        health = Health.from_condition_status(str(condition.get("status")))
    except ValueError as error:
        read.ignore(f"{at}.status", str(error))
        return None
    if since is None:
        read.ignore(at, f"a {HEALTHY} condition needs a lastTransitionTime")
        return None
    reason = read.text(condition.get("reason"), f"{at}.reason", limit=1024)
    message = read.text(condition.get("message"), f"{at}.message", limit=RESOURCE_MESSAGE)
    return CountedHealth(
        health, reason, message, since, _pending_from_api(read, where, item, health)
    )


def _pending_from_api(
    read: Reader, where: str, item: dict[str, Any], health: Health
) -> Pending | None:
    raw = read.mapping(item.get("pending"), f"{where}.pending")
    if not raw:
        return None
    since = read.time(raw.get("since"), f"{where}.pending.since")
    try:
        pending_health = Health.from_condition_status(str(raw.get("status")))
    except ValueError as error:
        read.ignore(f"{where}.pending.status", str(error))
        return None
    if health is not Health.HEALTHY or pending_health is Health.HEALTHY:
        read.ignore(
            f"{where}.pending", "a result is pending only while the counted health is Healthy"
        )
        return None
    if since is None:
        read.ignore(f"{where}.pending", "a pending result needs a since")
        return None
    reason = read.text(raw.get("reason"), f"{where}.pending.reason", limit=1024)
    message = read.text(raw.get("message"), f"{where}.pending.message", limit=RESOURCE_MESSAGE)
    return Pending(pending_health, reason, message, since)


def resources_healthy(
    resources: Sequence[Resource],
    counted: Mapping[str, CountedHealth],
    *,
    previous: Condition | None,
    now: datetime,
    generation: int,
) -> Condition | None:
    """The addon's `ResourcesHealthy`: `True` when every resource is counted `Healthy`, `False`
    when one is counted `Unhealthy`, else `Unknown`; None when no resource is configured.
    `previous` is the stored one: its transition time stays unless the status changes."""
    if not resources:
        return None
    healths = {_health(counted.get(r.name)) for r in resources}
    if Health.UNHEALTHY in healths:
        status = Health.UNHEALTHY.condition_status
    elif Health.UNKNOWN in healths:
        status = Health.UNKNOWN.condition_status
    else:
        status = Health.HEALTHY.condition_status
    message = cut(not_healthy(resources, counted) or "every resource is Healthy", ADDON_MESSAGE)
    since = transition_time(previous, status, now)
    return Condition(RESOURCES_HEALTHY, status, HEALTHY_CONDITION_RULE, message, since, generation)


def not_healthy(resources: Sequence[Resource], counted: Mapping[str, CountedHealth]) -> str:
    """Every resource not counted `Healthy`, by name, with its health, reason and message:
    `cert: Unhealthy, Failed (...); deployment: Unknown, NotFound (...)`; empty when none."""
    parts = []
    for resource in sorted(resources, key=lambda r: r.name):
        entry = counted.get(resource.name)
        if entry is None:
            parts.append(f"{resource.name}: {Health.UNKNOWN.value} ({_NEVER_OBSERVED})")
        elif entry.health is not Health.HEALTHY:
            detail = f" ({entry.message})" if entry.message else ""
            parts.append(f"{resource.name}: {entry.health.value}, {entry.reason}{detail}")
    return "; ".join(parts)


def _health(entry: CountedHealth | None) -> Health:
    return entry.health if entry is not None else Health.UNKNOWN
