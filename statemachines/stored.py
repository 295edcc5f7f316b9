"""The addon's state on the CR and back, as plain dicts: `status.conditions`, `status.collectors`
(the machines: reasons, open windows, generations, versions), `status.history`,
`status.versions`, `status.lastKnownGood` and `status.relatedObjects`.

A restart or a failover resumes exactly where it stopped, open dampening windows, versions and
history included; only the staleness clocks restart (nobody could report to a stopped
controller). `versions` and `relatedObjects` are for readers: the first is read back from
`collectors`, the second from the configuration.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any

from statemachines import dampening
from statemachines import health as health_rules
from statemachines.conditions import Condition, format_precise, format_time, parse_time
from statemachines.config import Config
from statemachines.errors import StoredStateError
from statemachines.size import Measure, encoded_size, fitted
from statemachines.state import (
    AddonState,
    CollectorState,
    HistoryEntry,
    LastKnownGood,
    Pending,
    initial_state,
)
from statemachines.vocabulary import Reason, State

__all__ = ["OWNED_FIELDS", "from_status", "to_status"]

# The status fields besides `conditions` that the controller owns whole: it replaces them, and
# drops one that it no longer writes (a history switched off). Everything else is someone else's.
OWNED_FIELDS = (
    "collectors",
    "history",
    "versions",
    "lastKnownGood",
    "relatedObjects",
    "resources",
)


def to_status(state: AddonState, *, measure: Measure = encoded_size) -> dict[str, Any]:
    """The status for `state`, fitted to the budget as `measure` counts it (docs/spec.md §6);
    `status.resources[]` only when resources are configured (§8)."""
    status: dict[str, Any] = {
        "conditions": [c.to_api() for c in state.conditions],
        "collectors": [_collector_to_api(c) for c in state.collectors],
    }
    if state.resources:
        status["resources"] = health_rules.resources_to_api(state.resources, state.health)
    versions = [{"name": c.name, "version": c.version} for c in state.collectors if c.version]
    if versions:
        status["versions"] = versions
    if state.history:
        status["history"] = [
            {
                "type": h.type,
                "reason": h.reason,
                "message": h.message,
                "lastTransitionTime": format_time(h.at),
            }
            for h in state.history
        ]
    if state.last_known_good is not None:
        good = state.last_known_good
        status["lastKnownGood"] = {"generation": good.generation, "since": format_time(good.since)}
    if state.related_objects:
        status["relatedObjects"] = [o.to_api() for o in state.related_objects]
    return fitted(status, measure=measure)


def _collector_to_api(c: CollectorState) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "state": c.state.value}
    if c.reason is not None:
        out["reason"] = c.reason.value
    if c.message:
        out["message"] = c.message
    if c.changed_at is not None:
        out["lastTransitionTime"] = format_precise(c.changed_at)
    if c.observed_generation is not None:
        out["observedGeneration"] = c.observed_generation
    if c.stale:
        out["stale"] = True
    if c.version is not None:
        out["version"] = c.version
    if c.desired_version is not None:
        out["desiredVersion"] = c.desired_version
    if c.pending is not None:
        out["pendingReason"] = c.pending.reason.value
        out["pendingSince"] = format_precise(c.pending.since)
        out["pendingMessage"] = c.pending.message
    return out


def from_status(
    status: dict[str, Any] | None, config: Config, now: datetime, generation: int = 0
) -> AddonState:
    """The state stored in `status`, for the configured collectors; the staleness clock restarts.

    `generation` is the CR's `metadata.generation` and the only one believed: a condition that
    carries a higher `observedGeneration` (written before FutureGeneration existed) is rewritten.
    A configured collector absent from the status starts fresh; an unconfigured one is dropped;
    so with the resources of `status.resources[]` (their pending results included).
    Raises StoredStateError naming the field that cannot be read.
    """
    status = status or {}
    stored = {}
    for index, raw in enumerate(status.get("collectors") or []):
        where = f"status.collectors[{index}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
            raise StoredStateError(where, "expected an object with a name")
        stored[raw["name"]] = (where, raw)
    conditions = []
    for index, raw in enumerate(status.get("conditions") or []):
        try:
            conditions.append(Condition.from_api(raw))
        except (KeyError, TypeError, ValueError) as error:
            raise StoredStateError(f"status.conditions[{index}]", str(error)) from error
    health = health_rules.resources_from_api(status.get("resources"), config.resources)
    fresh = initial_state(config, now, generation, health=health)
    collectors = tuple(
        _collector_from_api(*stored[c.name], now) if c.name in stored else c
        for c in fresh.collectors
    )
    return replace(
        fresh,
        collectors=collectors,
        conditions=tuple(conditions),
        history=_history_from_api(status.get("history"))[: config.history_limit],
        last_known_good=_last_known_good_from_api(status.get("lastKnownGood")),
    )


def _history_from_api(raw: object) -> tuple[HistoryEntry, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise StoredStateError("status.history", "expected a list")
    entries = []
    for index, item in enumerate(raw):
        try:
            entries.append(
                HistoryEntry(
                    str(item["type"]),
                    str(item["reason"]),
                    str(item.get("message", "")),
                    parse_time(str(item["lastTransitionTime"])),
                )
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise StoredStateError(
                f"status.history[{index}]", f"cannot be read: {error}"
            ) from error
    return tuple(entries)


def _last_known_good_from_api(raw: object) -> LastKnownGood | None:
    if raw is None:
        return None
    try:
        assert isinstance(raw, dict)
        return LastKnownGood(int(raw["generation"]), parse_time(str(raw["since"])))
    except (AssertionError, KeyError, TypeError, ValueError) as error:
        raise StoredStateError("status.lastKnownGood", f"cannot be read: {error}") from error


def _collector_from_api(where: str, raw: dict[str, Any], now: datetime) -> CollectorState:
    field_name = "state"
    try:
        state = State(raw["state"])
        field_name = "reason"
        reason = Reason(raw["reason"]) if raw.get("reason") else None
        field_name = "lastTransitionTime"
        changed = parse_time(raw["lastTransitionTime"]) if raw.get("lastTransitionTime") else None
        field_name = "pendingSince"
        pending = None
        if raw.get("pendingReason"):
            pending = Pending(
                Reason(raw["pendingReason"]),
                parse_time(raw["pendingSince"]),
                str(raw.get("pendingMessage", "")),
            )
        field_name = "observedGeneration"
        generation = int(raw["observedGeneration"]) if "observedGeneration" in raw else None
        field_name = "version"
        version = _text_or_none(raw.get("version"))
        field_name = "desiredVersion"
        desired = _text_or_none(raw.get("desiredVersion"))
    except (KeyError, TypeError, ValueError) as error:
        raise StoredStateError(f"{where}.{field_name}", f"cannot be read: {error}") from error
    if pending is not None and not dampening.fits(state, reason, pending.reason):
        raise StoredStateError(
            f"{where}.pendingReason",
            f"a {pending.reason.value} window cannot be open in {state.value} ({reason})",
        )
    return CollectorState(
        name=raw["name"],
        state=state,
        reason=reason,
        message=str(raw.get("message", "")),
        changed_at=changed,
        observed_generation=generation,
        pending=pending,
        stale=bool(raw.get("stale", False)),
        desired_version=desired,
        version=version,
        heard_at=now,
    )


def _text_or_none(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value
