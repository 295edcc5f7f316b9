"""Staleness (docs/spec.md §4), in one place.

A collector that is neither Disabled nor NotSupported and about which nothing was reported for
`staleAfter` goes stale at that deadline: its condition turns Unknown (`ReportsStale`) while its
machine state and reason underneath are kept. The clock restarts with every well-formed report
about the collector, whatever its verdict (a refused report is a sign of life too), and that
report ends the staleness.
"""

from __future__ import annotations

from datetime import datetime

from statemachines.evolve import evolve
from statemachines.settings import Settings
from statemachines.state import CollectorState
from statemachines.vocabulary import State

__all__ = ["deadline", "go_stale", "heard"]

_NEVER_STALE = (State.DISABLED, State.NOT_SUPPORTED)


def heard(c: CollectorState, now: datetime) -> CollectorState:
    """A report about `c` arrived at `now`: the clock restarts and staleness ends."""
    if c.stale:
        return evolve(c, stale=False, heard_at=now, changed_at=now)
    return evolve(c, heard_at=now)


def deadline(c: CollectorState, settings: Settings) -> datetime | None:
    """When `c` goes stale if nothing is reported about it; None if it cannot (any more)."""
    if c.stale or c.heard_at is None or c.state in _NEVER_STALE:
        return None
    return c.heard_at + settings.staleness_limit


def go_stale(c: CollectorState, at: datetime) -> CollectorState:
    return evolve(c, stale=True, changed_at=at)
