"""The addon's state on the CR and back, as plain dicts: `status.conditions`, `status.collectors`
(the machines: reasons, open windows, generations, versions), `status.history`,
`status.versions`, `status.lastKnownGood` and `status.relatedObjects`.

A restart or a failover resumes exactly where it stopped, open dampening windows, versions and
history included; only the staleness clocks restart (nobody could report to a stopped
controller). `versions` and `relatedObjects` are for readers: the first is read back from
`collectors`, the second from the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from statemachines import dampening
from statemachines import health as health_rules
from statemachines.conditions import (
    MAX_MESSAGE,
    Condition,
    ConditionStatus,
    format_precise,
    format_time,
)
from statemachines.config import Config
from statemachines.errors import StoredStateError
from statemachines.readback import Reader
from statemachines.reports import VERSION_LIMIT
from statemachines.size import HISTORY_MESSAGE, REPORT_MESSAGE, Measure, encoded_size, fitted
from statemachines.state import (
    AddonState,
    CollectorState,
    HistoryEntry,
    LastKnownGood,
    Pending,
    initial_state,
)
from statemachines.vocabulary import Reason, State

__all__ = ["OWNED_FIELDS", "Stored", "from_status", "longest_window", "read_status", "to_status"]

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
    `status.resources[]` only when resources are configured (docs/spec.md §8)."""
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


@dataclass(frozen=True, slots=True)
class Stored:
    """A state read back, and the stored fields taken as absent (docs/spec.md §6)."""

    state: AddonState
    ignored: tuple[StoredStateError, ...] = ()


# The CRD's list limits (manifests/base/crd.yaml): a longer stored list is absent whole.
_MAX = {"conditions": 32, "collectors": 8, "history": 1000}


def read_status(
    status: dict[str, Any] | None, config: Config, now: datetime, generation: int = 0
) -> Stored:
    """The state stored in `status`, for the configured collectors; the staleness clock restarts.

    `generation` is the CR's `metadata.generation` and the only one believed: a condition that
    carries a higher `observedGeneration` (written before FutureGeneration existed) is rewritten.
    A configured collector absent from the status starts fresh; an unconfigured one is dropped;
    so with the resources of `status.resources[]` (their pending results included). A field
    outside the rules' bounds is taken as absent and listed in `ignored`: a collector whose state
    or reason cannot be read starts fresh, a window that cannot be open is closed, a condition or
    a history entry that cannot be read is left out (the next write recomputes it).
    """
    read = Reader(longest=longest_window(config))
    status = read.mapping(status, "status") or {}
    stored: dict[str, CollectorState] = {}
    for index, raw in enumerate(read.items(status.get("collectors"), "status.collectors",
                                           limit=_MAX["collectors"])):  # fmt: skip
        collector = _collector_from_api(read, f"status.collectors[{index}]", raw, now)
        if collector is not None:
            stored[collector.name] = collector
    conditions = [
        condition
        for index, raw in enumerate(
            read.items(status.get("conditions"), "status.conditions", limit=_MAX["conditions"])
        )
        if (condition := _condition_from_api(read, f"status.conditions[{index}]", raw))
    ]
    health = health_rules.resources_from_api(status.get("resources"), config.resources, read)
    fresh = initial_state(config, now, generation, health=health)
    collectors = tuple(stored.get(c.name, c) for c in fresh.collectors)
    history = _history_from_api(read, status.get("history"))[: config.history_limit]
    state = replace(
        fresh,
        collectors=collectors,
        conditions=tuple(conditions),
        history=history,
        last_known_good=_last_known_good_from_api(read, status.get("lastKnownGood")),
    )
    return Stored(state, tuple(read.ignored))


def from_status(
    status: dict[str, Any] | None, config: Config, now: datetime, generation: int = 0
) -> AddonState:
    """`read_status`'s state (what was ignored, left unsaid)."""
    return read_status(status, config, now, generation).state


def longest_window(config: Config) -> timedelta:
    """The longest time the core adds to a stored time: a window, a staleness limit, a `for`."""
    windows = [
        length
        for s in config.settings.values()
        for length in (s.degrade_after, s.recover_after, s.staleness_limit)
    ]
    return max([*windows, *(r.for_ for r in config.resources), timedelta(0)])


def _condition_from_api(read: Reader, where: str, raw: object) -> Condition | None:
    item = read.mapping(raw, where)
    if item is None:
        return None
    at = read.time(item.get("lastTransitionTime"), f"{where}.lastTransitionTime")
    generation = read.generation(item.get("observedGeneration", 0), f"{where}.observedGeneration")
    try:
        if at is None:
            raise ValueError("no lastTransitionTime")
        return Condition(
            type=str(item["type"]),
            status=ConditionStatus(item["status"]),
            reason=str(item["reason"]),
            message=read.text(item.get("message"), f"{where}.message", limit=MAX_MESSAGE),
            last_transition_time=at,
            observed_generation=generation or 0,
        )
    except (KeyError, TypeError, ValueError) as error:
        read.ignore(where, f"cannot be read: {error}")
        return None


def _history_from_api(read: Reader, raw: object) -> tuple[HistoryEntry, ...]:
    entries = []
    for index, item in enumerate(read.items(raw, "status.history", limit=_MAX["history"])):
        where = f"status.history[{index}]"
        entry = read.mapping(item, where)
        if entry is None:
            continue
        at = read.time(entry.get("lastTransitionTime"), f"{where}.lastTransitionTime")
        type_, reason = entry.get("type"), entry.get("reason")
        if at is None or not isinstance(type_, str) or not isinstance(reason, str):
            read.ignore(where, "needs a type, a reason and a lastTransitionTime")
            continue
        message = read.text(entry.get("message"), f"{where}.message", limit=HISTORY_MESSAGE)
        entries.append(HistoryEntry(type_, reason, message, at))
    return tuple(entries)


def _last_known_good_from_api(read: Reader, raw: object) -> LastKnownGood | None:
    good = read.mapping(raw, "status.lastKnownGood")
    if good is None:
        return None
    generation = read.generation(good.get("generation"), "status.lastKnownGood.generation")
    since = read.time(good.get("since"), "status.lastKnownGood.since")
    if generation is None or since is None:
        read.ignore("status.lastKnownGood", "needs a generation and a since")
        return None
    return LastKnownGood(generation, since)


def _collector_from_api(
    read: Reader, where: str, raw: object, now: datetime
) -> CollectorState | None:
    """The collector stored at `where`; None (it starts fresh) when its name, state or reason
    cannot be read. A window that cannot be read, or cannot be open in its state, is closed."""
    item = read.mapping(raw, where)
    if item is None or not isinstance(item.get("name"), str):
        read.ignore(where, "expected an object with a name")
        return None
    try:
        state = State(str(item.get("state")))
        reason = Reason(item["reason"]) if item.get("reason") else None
    except ValueError as error:
        read.ignore(where, f"cannot be read: {error}")
        return None
    changed = read.time(item.get("lastTransitionTime"), f"{where}.lastTransitionTime")
    return CollectorState(
        name=item["name"],
        state=state,
        reason=reason,
        message=read.text(item.get("message"), f"{where}.message", limit=REPORT_MESSAGE),
        changed_at=changed or now,
        observed_generation=read.generation(
            item.get("observedGeneration"), f"{where}.observedGeneration"
        ),
        pending=_pending_from_api(read, where, item, state, reason),
        stale=item.get("stale") is True,
        desired_version=_version(read, item.get("desiredVersion"), f"{where}.desiredVersion"),
        version=_version(read, item.get("version"), f"{where}.version"),
        heard_at=now,
    )


def _pending_from_api(
    read: Reader, where: str, item: dict[str, Any], state: State, reason: Reason | None
) -> Pending | None:
    if not item.get("pendingReason"):
        return None
    since = read.time(item.get("pendingSince"), f"{where}.pendingSince")
    try:
        pending_reason = Reason(item["pendingReason"])
    except ValueError:
        read.ignore(f"{where}.pendingReason", f"{item['pendingReason']!r} is not a reason")
        return None
    if since is None:
        return None
    if not dampening.fits(state, reason, pending_reason):
        read.ignore(
            f"{where}.pendingReason",
            f"a {pending_reason.value} window cannot be open in {state.value} ({reason})",
        )
        return None
    message = read.text(item.get("pendingMessage"), f"{where}.pendingMessage", limit=REPORT_MESSAGE)
    return Pending(pending_reason, since, message)


def _version(read: Reader, value: object, where: str) -> str | None:
    """A version as a report may carry one (docs/spec.md §9): 1 to 64 characters, no control
    character."""
    if value is None:
        return None
    if isinstance(value, str) and 0 < len(value) <= VERSION_LIMIT and value.isprintable():
        return value
    read.ignore(where, f"{str(value)[:40]!r} is not a version of 1 to {VERSION_LIMIT} characters")
    return None
