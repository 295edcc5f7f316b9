"""What the core answers: the new state, the verdict, the conditions to write, the next wake-up,
and the visible moves (`Change`) that the shell turns into logs, metrics and Events."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from functools import cache

from statemachines.conditions import Condition
from statemachines.reports import Verdict
from statemachines.state import AddonState, CollectorState
from statemachines.vocabulary import Reason, State

__all__ = ["Cause", "Change", "Outcome", "Position", "position_label"]


class Cause(StrEnum):
    """What moved a collector."""

    REPORT = "report"
    DAMPENING_WINDOW = "dampening window"  # a window ran out: the timer moved it
    STALENESS = "staleness"  # nothing was reported for staleAfter


@dataclass(frozen=True, slots=True)
class Position:
    """Where a collector's machine stands, as a move shows it."""

    state: State
    reason: Reason | None
    stale: bool = False

    @classmethod
    def of(cls, c: CollectorState) -> Position:
        return cls(c.state, c.reason, c.stale)

    @property
    def label(self) -> str:
        """For people: `Available (ForwardSuccessful)`, `Available (ForwardSuccessful, stale)`."""
        return position_label(self.state, self.reason, self.stale)


@cache  # a few dozen positions exist; verdicts and moves name them on every report
def position_label(state: State, reason: Reason | None, stale: bool) -> str:
    named = reason.value if reason else "no reason"
    return f"{state.value} ({named}{', stale' if stale else ''})"


@dataclass(frozen=True, slots=True)
class Change:
    """One visible move of one collector: its state, reason or staleness changed at `at`."""

    at: datetime
    collector: str
    cause: Cause
    before: Position
    after: Position

    @property
    def label(self) -> str:
        return f"{self.before.label} -> {self.after.label}"


@dataclass(frozen=True, slots=True)
class Outcome:
    state: AddonState
    verdict: Verdict | None  # None when only time passed or the generation changed
    conditions: tuple[Condition, ...] | None  # None: the stored status is already right
    next_wakeup: datetime | None
    changes: tuple[Change, ...] = ()

    @property
    def changed(self) -> bool:
        return self.conditions is not None
