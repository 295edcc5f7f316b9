"""Flap dampening (docs/spec.md §3), in one place.

A forwarding reason that would move a collector across a row guarded by `WINDOW_ELAPSED` must
hold for a window first: `degradeAfter` for `ForwardFailure` (Available -> Degraded),
`recoverAfter` for `ForwardSuccessful` (Degraded(ForwardFailure) -> Available; 0 by default, so
recovery is immediate unless set). The first such report opens the window (`pending`), later ones
keep its start and update its message, the current reason again cancels it, any move of the
collector closes it, and if nothing did by its deadline the timer moves the collector then.
Operator reasons are never dampened.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from statemachines.evolve import evolve
from statemachines.machines import ROWS, WINDOW_ELAPSED, fire
from statemachines.settings import Settings
from statemachines.state import CollectorState, Pending
from statemachines.vocabulary import Reason, State

__all__ = ["cancel", "close", "deadline", "fits", "hold", "window"]


def window(reason: Reason, settings: Settings) -> timedelta:
    """How long `reason` must hold before it moves the collector; 0: not dampened."""
    if reason is Reason.FORWARD_FAILURE:
        return settings.degrade_after
    if reason is Reason.FORWARD_SUCCESSFUL:
        return settings.recover_after
    return timedelta(0)


def hold(
    c: CollectorState, reason: Reason, message: str, now: datetime, length: timedelta
) -> tuple[CollectorState, datetime]:
    """Open the window on the first report of `reason`; a later one keeps its start and updates
    its message. Returns the collector and the window's deadline."""
    since = c.pending.since if c.pending and c.pending.reason is reason else now
    return evolve(c, pending=Pending(reason, since, message)), since + length


def cancel(c: CollectorState) -> CollectorState:
    """The current reason again interrupts an open window on the other forwarding reason."""
    return c if c.pending is None else evolve(c, pending=None)


def deadline(c: CollectorState, settings: Settings) -> datetime | None:
    """When the open window, if any, ends."""
    if c.pending is None:
        return None
    return c.pending.since + window(c.pending.reason, settings)


def close(c: CollectorState, at: datetime) -> CollectorState:
    """The window ran out uninterrupted: its reason moves the collector at its deadline `at`,
    with the message of the last report inside it."""
    assert c.pending is not None
    moved = fire(c.state, c.reason, c.pending.reason, window_elapsed=True)
    assert isinstance(moved, State), f"an open window in {c.state} on {c.pending.reason} is stuck"
    return c.moved(moved, c.pending.reason, c.pending.message, at)


def fits(state: State, reason: Reason | None, pending: Reason) -> bool:
    """Whether a window on `pending` can be open in (`state`, `reason`): only where a row guarded
    by the window exists and its other guards hold (Available on a failure, Degraded because of
    ForwardFailure on a recovery). Checks a window read back from the CR."""
    dampened = any(
        WINDOW_ELAPSED in r.guards for r in ROWS if r.source is state and r.trigger is pending
    )
    return dampened and isinstance(fire(state, reason, pending, window_elapsed=True), State)
