"""The two transition definitions of a collector's state machine, as data, and `fire`.

The endpoint operator's rows and the metrics collector's rows are kept apart (and drawn apart in
`diagrams/`); a collector's machine is their union. The same rows build the runtime
`transitions` machine and the mermaid diagrams, so the picture cannot drift from the behaviour.
`fire` is the one question the core asks the machine: where does this reason take the collector,
or which guard (or missing row) stops it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from transitions import EventData, Machine

from statemachines.vocabulary import Reason, Rule, State

__all__ = [
    "COLLECTOR_ROWS",
    "OPERATOR_ROWS",
    "REQUIRES_FORWARD_FAILURE",
    "ROWS",
    "WINDOW_ELAPSED",
    "Blocked",
    "CollectorModel",
    "Guard",
    "Row",
    "build_machine",
    "fire",
    "rows_from",
]

# Its INFO logging triples the cost of a trigger. (Refusals never reach it as invalid triggers,
# which it would log as warnings: `fire` asks the rows first.)
logging.getLogger("transitions").setLevel(logging.WARNING)


class CollectorModel:
    """The mutable stand-in a `transitions` machine moves; lives for one trigger only."""

    __slots__ = ("reason", "state")

    def __init__(self, state: State, reason: Reason | None) -> None:
        self.state = state
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Guard:
    """A pure predicate on a transition. Its `rule` names it when it refuses a report; None
    for the dampening window, which makes a report pending instead of refusing it."""

    rule: Rule | None
    label: str  # how the diagram writes it, in square brackets
    test: Callable[[EventData], bool]
    explain: str


@dataclass(frozen=True, slots=True)
class Row:
    trigger: Reason
    source: State
    dest: State
    guards: tuple[Guard, ...] = ()


def _reason_is_forward_failure(event: EventData) -> bool:
    model = event.model
    return isinstance(model, CollectorModel) and model.reason is Reason.FORWARD_FAILURE


def _window_elapsed(event: EventData) -> bool:
    return bool(event.kwargs.get("window_elapsed", False))


REQUIRES_FORWARD_FAILURE = Guard(
    rule=Rule.REQUIRES_FORWARD_FAILURE,
    label="ForwardFailure",
    test=_reason_is_forward_failure,
    explain="only a Degraded state caused by ForwardFailure can change this way; "
    "an UpdateFailure is cleared only by UpdateSuccessful",
)
WINDOW_ELAPSED = Guard(
    rule=None,
    label="window elapsed",
    test=_window_elapsed,
    explain="the signal has not held for the whole dampening window yet",
)

S, R = State, Reason

OPERATOR_ROWS: tuple[Row, ...] = (
    Row(R.UPDATE_SUCCESSFUL, S.PROGRESSING, S.PROGRESSING),
    Row(R.UPDATE_FAILURE, S.PROGRESSING, S.DEGRADED),
    Row(R.DISABLED_METRICS, S.PROGRESSING, S.DISABLED),
    Row(R.NOT_SUPPORTED, S.PROGRESSING, S.NOT_SUPPORTED),
    Row(R.UPDATE_SUCCESSFUL, S.AVAILABLE, S.PROGRESSING),
    Row(R.UPDATE_FAILURE, S.AVAILABLE, S.DEGRADED),
    Row(R.DISABLED_METRICS, S.AVAILABLE, S.DISABLED),
    Row(R.UPDATE_SUCCESSFUL, S.DEGRADED, S.PROGRESSING),
    # Not in the seed's picture: without it an UpdateFailure during a forwarding outage would be
    # refused, and the next ForwardSuccessful would make the collector Available.
    Row(R.UPDATE_FAILURE, S.DEGRADED, S.DEGRADED, (REQUIRES_FORWARD_FAILURE,)),
    Row(R.DISABLED_METRICS, S.DEGRADED, S.DISABLED),
    # The "unlocking" transitions the seed leaves out of its picture.
    Row(R.DISABLED_METRICS, S.NOT_SUPPORTED, S.DISABLED),
    Row(R.UPDATE_SUCCESSFUL, S.NOT_SUPPORTED, S.PROGRESSING),
    Row(R.UPDATE_FAILURE, S.NOT_SUPPORTED, S.DEGRADED),
    Row(R.UPDATE_SUCCESSFUL, S.DISABLED, S.PROGRESSING),
    Row(R.UPDATE_FAILURE, S.DISABLED, S.DEGRADED),
)

COLLECTOR_ROWS: tuple[Row, ...] = (
    Row(R.FORWARD_FAILURE, S.PROGRESSING, S.DEGRADED),
    Row(R.FORWARD_SUCCESSFUL, S.PROGRESSING, S.AVAILABLE),
    # A collector clears only what it caused; with recoverAfter the success must also hold.
    Row(R.FORWARD_SUCCESSFUL, S.DEGRADED, S.AVAILABLE, (REQUIRES_FORWARD_FAILURE, WINDOW_ELAPSED)),
    Row(R.FORWARD_FAILURE, S.AVAILABLE, S.DEGRADED, (WINDOW_ELAPSED,)),
)

ROWS = OPERATOR_ROWS + COLLECTOR_ROWS
INITIAL = State.PROGRESSING


def rows_from(rows: tuple[Row, ...], state: State, trigger: Reason) -> list[Row]:
    return [r for r in rows if r.source is state and r.trigger is trigger]


def build_machine(rows: tuple[Row, ...]) -> Machine:
    """One machine for every collector (`model=None`): models are passed to each trigger."""
    return Machine(
        model=None,
        states=list(State),
        initial=INITIAL,
        transitions=[_as_transition(r) for r in rows],
        auto_transitions=False,  # `to_<state>()` would bypass the table
        send_event=True,
        ignore_invalid_triggers=False,  # `fire` never sends one: it would be a bug here
    )


def _as_transition(row: Row) -> dict[str, Any]:
    return {
        "trigger": row.trigger.value,
        "source": row.source,
        "dest": row.dest,
        "conditions": [g.test for g in row.guards],
    }


MACHINE = build_machine(ROWS)


@dataclass(frozen=True, slots=True)
class Blocked:
    """Why the machine does not move: the first failing guard, or no row at all."""

    guard: Guard | None  # None: no row from this state on this reason
    why: str

    @property
    def rule(self) -> Rule | None:
        """The refusing rule; None when only the dampening window is not over yet."""
        return self.guard.rule if self.guard is not None else Rule.NO_TRANSITION


@functools.cache  # a pure function of a few hundred possible arguments: each asked once
def fire(
    state: State, reason: Reason | None, trigger: Reason, *, window_elapsed: bool
) -> State | Blocked:
    """The state `trigger` moves a collector in (`state`, `reason`) to, or what blocks it.

    The guards read only `reason` and `window_elapsed`, so the machine's answer is remembered:
    a trigger through `transitions` costs tens of microseconds. The rows are asked first, so
    the machine only ever sees a trigger that has a row: an invalid one would be logged by the
    library as a warning, and a refusal is a verdict.
    """
    rows = rows_from(ROWS, state, trigger)
    if not rows:
        allowed = sorted({r.trigger.value for r in ROWS if r.source is state})
        why = f"no transition from {state.value} on it (allowed: {', '.join(allowed)})"
        return Blocked(None, why)
    model = CollectorModel(state, reason)
    if MACHINE.events[trigger.value].trigger(model, window_elapsed=window_elapsed):
        return State(model.state)
    event = EventData(None, None, MACHINE, model, (), {"window_elapsed": window_elapsed})
    for row in rows:
        for guard in row.guards:
            if not guard.test(event):
                return Blocked(guard, guard.explain)
    raise AssertionError("a row whose guards hold was not taken")  # pragma: no cover
