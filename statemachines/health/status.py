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

from statemachines.conditions import Condition, format_time, parse_time, transition_time
from statemachines.errors import StoredStateError
from statemachines.health.counted import CountedHealth, Pending
from statemachines.health.resources import Resource
from statemachines.health.vocabulary import (
    HEALTHY,
    HEALTHY_CONDITION_RULE,
    RESOURCES_HEALTHY,
    Health,
)
from statemachines.size import ADDON_MESSAGE, cut

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


def resources_from_api(raw: object, resources: Sequence[Resource]) -> dict[str, CountedHealth]:
    """The counted health stored in `status.resources`, for the configured resources.

    An entry of a resource no longer configured is dropped; a configured one absent, or with no
    condition, has no entry. Raises StoredStateError naming the field that cannot be read.
    """
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise StoredStateError("status.resources", "expected a list")
    configured = {r.name for r in resources}
    counted: dict[str, CountedHealth] = {}
    for index, item in enumerate(raw):
        where = f"status.resources[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise StoredStateError(where, "expected an object with a name")
        if item["name"] in configured and item.get("conditions"):
            counted[item["name"]] = _counted_from_api(where, item)
    return counted


def _counted_from_api(where: str, item: dict[str, Any]) -> CountedHealth:
    field = "conditions[0]"
    try:
        condition = next(c for c in item["conditions"] if c.get("type") == HEALTHY)
        health = Health.from_condition_status(str(condition["status"]))
        since = parse_time(str(condition["lastTransitionTime"]))
        pending = None
        raw_pending = item.get("pending")
        if raw_pending:
            field = "pending"
            pending = Pending(
                Health.from_condition_status(str(raw_pending["status"])),
                str(raw_pending["reason"]),
                str(raw_pending.get("message", "")),
                parse_time(str(raw_pending["since"])),
            )
    except (StopIteration, AttributeError, KeyError, TypeError, ValueError) as error:
        raise StoredStateError(f"{where}.{field}", f"cannot be read: {error!r}") from error
    if pending is not None and (health is not Health.HEALTHY or pending.health is Health.HEALTHY):
        raise StoredStateError(
            f"{where}.pending", "a result is pending only while the counted health is Healthy"
        )
    reason, message = str(condition.get("reason", "")), str(condition.get("message", ""))
    return CountedHealth(health, reason, message, since, pending)


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
