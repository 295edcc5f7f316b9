"""The state of one addon: each collector's machine, its open window, and the conditions.

Immutable values; the entry point returns new ones. `to_status` / `from_status` map the state to
and from the CR's `status`, so that a restart or a failover resumes exactly where it stopped,
open dampening windows included.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from statemachines.conditions import Condition, parse_time
from statemachines.config import Config
from statemachines.errors import StoredStateError
from statemachines.vocabulary import Reason, State

__all__ = ["AddonState", "CollectorState", "Pending", "from_status", "initial_state", "to_status"]


@dataclass(frozen=True, slots=True)
class Pending:
    """An open dampening window: `reason` has held since `since`; the last report said `message`."""

    reason: Reason
    since: datetime
    message: str


@dataclass(frozen=True, slots=True)
class CollectorState:
    name: str
    state: State = State.PROGRESSING
    reason: Reason | None = None  # None until the first report
    message: str = ""
    changed_at: datetime | None = None  # last change of state, reason or staleness
    observed_generation: int | None = None  # highest generation of a report it took
    pending: Pending | None = None
    stale: bool = False
    # When a report about it last arrived: the staleness clock. Not stored on the CR (a heartbeat
    # must write nothing), hence left out of equality; it restarts when the controller starts.
    heard_at: datetime | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class AddonState:
    collectors: tuple[CollectorState, ...]
    generation: int = 0  # the addon CR's metadata.generation the status is computed for
    conditions: tuple[Condition, ...] = ()

    def collector(self, name: str) -> CollectorState:
        for c in self.collectors:
            if c.name == name:
                return c
        raise KeyError(name)

    def with_collector(self, new: CollectorState) -> AddonState:
        collectors = tuple(new if c.name == new.name else c for c in self.collectors)
        return AddonState(collectors, self.generation, self.conditions)


def initial_state(config: Config, now: datetime, generation: int = 0) -> AddonState:
    """Every configured collector `Progressing` with no reason; the staleness clock starts now."""
    return AddonState(
        tuple(CollectorState(c.name, changed_at=now, heard_at=now) for c in config.collectors),
        generation,
    )


def to_status(state: AddonState) -> dict[str, Any]:
    return {
        "conditions": [c.to_api() for c in state.conditions],
        "collectors": [_collector_to_api(c) for c in state.collectors],
    }


def _collector_to_api(c: CollectorState) -> dict[str, Any]:
    out: dict[str, Any] = {"name": c.name, "state": c.state.value}
    if c.reason is not None:
        out["reason"] = c.reason.value
    if c.message:
        out["message"] = c.message
    if c.changed_at is not None:
        out["lastTransitionTime"] = _precise(c.changed_at)
    if c.observed_generation is not None:
        out["observedGeneration"] = c.observed_generation
    if c.stale:
        out["stale"] = True
    if c.pending is not None:
        out["pendingReason"] = c.pending.reason.value
        out["pendingSince"] = _precise(c.pending.since)
        out["pendingMessage"] = c.pending.message
    return out


def _precise(moment: datetime) -> str:
    """RFC 3339 with the microseconds kept, so a restored window ends exactly on time."""
    return moment.isoformat().replace("+00:00", "Z")


def from_status(
    status: dict[str, Any] | None, config: Config, now: datetime, generation: int = 0
) -> AddonState:
    """The state stored in `status`, for the configured collectors; the staleness clock restarts.

    A configured collector absent from the status starts fresh; an unconfigured one is dropped.
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
    fresh = initial_state(config, now, generation)
    collectors = tuple(
        _collector_from_api(*stored[c.name], now) if c.name in stored else c
        for c in fresh.collectors
    )
    observed = [c.observed_generation for c in conditions]
    return AddonState(collectors, max([generation, *observed]), tuple(conditions))


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
    except (KeyError, TypeError, ValueError) as error:
        raise StoredStateError(f"{where}.{field_name}", f"cannot be read: {error}") from error
    if pending is not None and not _window_fits(state, reason, pending.reason):
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
        heard_at=now,
    )


def _window_fits(state: State, reason: Reason | None, pending: Reason) -> bool:
    """Windows open only on Available (a failure) and on Degraded(ForwardFailure) (a recovery)."""
    if pending is Reason.FORWARD_FAILURE:
        return state is State.AVAILABLE
    return state is State.DEGRADED and reason is Reason.FORWARD_FAILURE
