"""The counted health of a resource: a rule's result held for `for`, as a Prometheus alert's.

The counted health follows the rule's result at once, except after a counted `Healthy`: then a
result other than `Healthy` counts only once it has held for `for` with no `Healthy` result in
between (it may switch between `Unhealthy` and `Unknown` meanwhile). Until then the resource
stays counted `Healthy` and carries a `Pending` — plain data, persisted in `status.resources[]`
like a dampening window — and the core asks to be woken at `since + for`, when `fire` makes it
count with no further change of the object. Recovery to `Healthy` is immediate.

Every function takes `now`; none reads a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from statemachines.health.resources import Resource
from statemachines.health.rules import Result, not_found
from statemachines.health.vocabulary import Health

__all__ = [
    "CountedHealth",
    "Pending",
    "advance",
    "count",
    "due",
    "fire",
    "next_wakeup",
    "start",
]


@dataclass(frozen=True, slots=True)
class Pending:
    """A result other than `Healthy`, the latest one, that has held since `since`."""

    health: Health
    reason: str
    message: str
    since: datetime


@dataclass(frozen=True, slots=True)
class CountedHealth:
    """What counts for one resource. `since` is its `Healthy` condition's lastTransitionTime:
    it moves only when `health` changes, and is kept in whole seconds as the API writes it."""

    health: Health
    reason: str
    message: str
    since: datetime
    pending: Pending | None = None

    def __post_init__(self) -> None:
        if self.since.microsecond:
            object.__setattr__(self, "since", self.since.replace(microsecond=0))


def count(
    previous: CountedHealth | None, result: Result, now: datetime, *, for_: timedelta
) -> CountedHealth:
    """`result`, evaluated at `now`, counted. A pending result due by `now` counts first, at its
    own deadline, so an evaluation that races the timer is judged against the right state."""
    if previous is None:
        return CountedHealth(result.health, result.reason, result.message, now)
    current = fire(previous, now, for_=for_)
    held_back = current.health is Health.HEALTHY and for_ > timedelta(0)
    if result.health is not Health.HEALTHY and held_back:
        since = current.pending.since if current.pending is not None else now
        pending = Pending(result.health, result.reason, result.message, since)
        return replace(current, pending=pending)
    since = current.since if current.health is result.health else now
    return CountedHealth(result.health, result.reason, result.message, since)


def due(counted: CountedHealth, *, for_: timedelta) -> datetime | None:
    """When the pending result counts, if one is pending."""
    return counted.pending.since + for_ if counted.pending is not None else None


def fire(counted: CountedHealth, now: datetime, *, for_: timedelta) -> CountedHealth:
    """The pending result counted if it is due by `now`, its transition time the deadline."""
    deadline = due(counted, for_=for_)
    if counted.pending is None or deadline is None or now < deadline:
        return counted
    pending = counted.pending
    return CountedHealth(pending.health, pending.reason, pending.message, deadline)


# --- every configured resource at once: what the core's entry points call ---------------------


def start(
    resources: Sequence[Resource], stored: Mapping[str, CountedHealth], now: datetime
) -> dict[str, CountedHealth]:
    """Every configured resource: its stored entry (pending result and all), or, until its
    object is read, `Unknown`/`NotFound` from `now`."""
    return {
        r.name: stored[r.name] if r.name in stored else count(None, not_found(r), now, for_=r.for_)
        for r in resources
    }


def advance(
    resources: Sequence[Resource], counted: Mapping[str, CountedHealth], now: datetime
) -> dict[str, CountedHealth]:
    """Time passing: every pending result due by `now` counts. Resources with no entry stay
    without one; entries of resources no longer configured are dropped."""
    return {r.name: fire(counted[r.name], now, for_=r.for_) for r in resources if r.name in counted}


def next_wakeup(
    resources: Sequence[Resource], counted: Mapping[str, CountedHealth]
) -> datetime | None:
    """The earliest deadline of a pending result, for the shell's timer."""
    deadlines = [
        deadline
        for r in resources
        if r.name in counted and (deadline := due(counted[r.name], for_=r.for_)) is not None
    ]
    return min(deadlines, default=None)
