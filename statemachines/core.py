"""The entry point: (state, report, now) -> new state, verdict, conditions to write, next wake-up.

`apply` judges a report; `advance` lets time pass. Both first fire every timer due by `now`, each
at its own due time, so a report that races its timer is judged against the right state. The
shell never decides status: it calls these and writes what they return.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from transitions import EventData

from statemachines.aggregate import write_conditions
from statemachines.conditions import Condition
from statemachines.config import Config
from statemachines.machines import (
    COLLECTOR_ROWS,
    OPERATOR_ROWS,
    WINDOW_ELAPSED,
    CollectorModel,
    build_machine,
    rows_from,
)
from statemachines.reports import STRENGTH, Report, Verdict, VerdictKind
from statemachines.settings import Settings
from statemachines.state import AddonState, CollectorState, Pending, from_status
from statemachines.vocabulary import Reason, State

__all__ = ["Change", "Outcome", "advance", "apply", "next_wakeup", "observe_generation", "start"]

ROWS = OPERATOR_ROWS + COLLECTOR_ROWS
MACHINE = build_machine(ROWS)


@dataclass(frozen=True, slots=True)
class Change:
    """One visible move, for the timeline, the logs and the Kubernetes Events."""

    at: datetime
    collector: str
    cause: str  # "report", "dampening window", "staleness"
    before: str
    after: str


@dataclass(frozen=True, slots=True)
class Outcome:
    state: AddonState
    verdict: Verdict | None  # None when only time passed
    conditions: tuple[Condition, ...] | None  # None: the stored status is already right
    next_wakeup: datetime | None
    changes: tuple[Change, ...] = ()

    @property
    def changed(self) -> bool:
        return self.conditions is not None


def apply(state: AddonState, report: Report, now: datetime, *, config: Config) -> Outcome:
    """Judge `report` at `now`. A report without collector goes to every collector as one step:
    refused if any refuses (then nothing changes), else the strongest verdict of theirs."""
    before = state
    state, changes = _fire_due(state, now, config)
    names = [report.collector] if report.collector else [c.name for c in config.collectors]
    judged = [
        _judge(_heard(state.collector(n), now), report, now, config.settings[n], state.generation)
        for n in names
    ]
    refused = any(v.kind is VerdictKind.REFUSED for _, v, _ in judged)
    for new, _, change in judged:
        old = state.collector(new.name)
        # Nothing changes on a refusal, but a refused report is a sign of life too.
        after = _heard(old, now) if refused else new
        state = state.with_collector(after)
        if change is not None and not refused:
            changes = (*changes, change)
        elif old.stale:  # the report ended staleness: a visible change of its own
            changes = (*changes, Change(now, old.name, "report", _label(old), _label(after)))
    verdict = judged[0][1] if len(judged) == 1 else _combined([j[1] for j in judged], config)
    if state.collectors != before.collectors or state.generation != before.generation:
        state = write_conditions(state, config, now)
    return _outcome(before, state, verdict, changes, config)


def start(
    config: Config, now: datetime, *, status: dict[str, Any] | None = None, generation: int = 1
) -> AddonState:
    """The state a controller starts from: what `status` on the CR holds, else every collector
    fresh; conditions computed. The staleness clocks start now."""
    state = from_status(status, config, now, generation)
    after, _ = _fire_due(state, now, config)  # a window that ended while nobody was running
    return write_conditions(after, config, now)


def advance(state: AddonState, now: datetime, *, config: Config) -> Outcome:
    """Let time pass to `now`: fire the dampening and staleness timers that are due."""
    after, changes = _fire_due(state, now, config)
    return _outcome(state, after, None, changes, config)


def observe_generation(
    state: AddonState, generation: int, now: datetime, *, config: Config
) -> Outcome:
    """The CR's `metadata.generation` as the shell read it; the conditions follow it."""
    after = replace(state, generation=max(state.generation, generation))
    return _outcome(state, write_conditions(after, config, now), None, (), config)


def next_wakeup(state: AddonState, config: Config) -> datetime | None:
    due = [_due(c, config.settings[c.name]) for c in state.collectors]
    times = [d[0] for d in due if d is not None]
    return min(times) if times else None


def _outcome(
    before: AddonState,
    after: AddonState,
    verdict: Verdict | None,
    changes: tuple[Change, ...],
    config: Config,
) -> Outcome:
    changed = after.conditions != before.conditions or after.collectors != before.collectors
    return Outcome(
        after, verdict, after.conditions if changed else None, next_wakeup(after, config), changes
    )


def _heard(c: CollectorState, now: datetime) -> CollectorState:
    """Any well-formed report restarts the staleness clock and ends staleness."""
    if c.stale:
        return replace(c, stale=False, heard_at=now, changed_at=now)
    return replace(c, heard_at=now)


def _judge(
    c: CollectorState, report: Report, now: datetime, settings: Settings, cr_generation: int
) -> tuple[CollectorState, Verdict, Change | None]:
    """One collector's answer to one report: generation, heartbeat, machine, dampening."""
    before = c
    generation = report.observed_generation
    if generation is not None and generation > cr_generation:
        # A reporter never raises the generation the controller works at (the shell has read
        # the CR again before it called this).
        detail = f"generation {generation} is newer than the addon CR's {cr_generation}"
        return c, _verdict(VerdictKind.REFUSED, c, detail, rule="FutureGeneration"), None
    if (
        generation is not None
        and c.observed_generation is not None
        and generation < c.observed_generation
    ):
        detail = f"generation {generation} is older than {c.observed_generation}, already taken"
        return c, _verdict(VerdictKind.REFUSED, c, detail, rule="OutdatedGeneration"), None
    if generation is not None:
        c = replace(c, observed_generation=max(generation, c.observed_generation or 0))
    if c.reason is report.reason:
        # A window is always open on the other forwarding reason: the repeat interrupts it.
        message = c.message if report.message is None else report.message
        new = replace(c, message=message, pending=None)
        detail = "the current reason again" + (
            "; the open window is cancelled" if c.pending else ""
        )
        return new, _verdict(VerdictKind.HEARTBEAT, new, detail), None
    window = _window(report.reason, settings)
    model = CollectorModel(c.state, c.reason)
    if MACHINE.events[report.reason.value].trigger(model, window_elapsed=not window):
        new = replace(
            c,
            state=model.state,
            reason=report.reason,
            message=report.message or "",
            changed_at=now,
            pending=None,
        )
        change = Change(now, c.name, "report", _label(c), _label(new))
        return new, _verdict(VerdictKind.ACCEPTED, new, f"{_label(c)} -> {_label(new)}"), change
    rule, why = _refusal(c, report.reason, window_elapsed=not window)
    if rule is WINDOW_ELAPSED.rule:
        return _dampen(c, report, now, window)
    refused = replace(c, observed_generation=before.observed_generation)
    detail = f"{_label(c)} refuses {report.reason.value} [{rule}]: {why}"
    return refused, _verdict(VerdictKind.REFUSED, refused, detail, rule=rule), None


def _dampen(
    c: CollectorState, report: Report, now: datetime, window: timedelta
) -> tuple[CollectorState, Verdict, Change | None]:
    """Open the window on the first report of it; later ones keep its start, update its message."""
    since = c.pending.since if c.pending and c.pending.reason is report.reason else now
    new = replace(c, pending=Pending(report.reason, since, report.message or ""))
    deadline = since + window
    detail = f"{report.reason.value} must hold until the window ends; {_label(c)} until then"
    return new, _verdict(VerdictKind.PENDING, new, detail, deadline=deadline), None


def _refusal(c: CollectorState, reason: Reason, *, window_elapsed: bool) -> tuple[str, str]:
    """The rule that refuses `reason` in this state: the first failing guard, or no row at all."""
    rows = rows_from(ROWS, c.state, reason)
    if not rows:
        allowed = sorted({r.trigger.value for r in ROWS if r.source is c.state})
        return (
            "NoTransition",
            f"no transition from {c.state.value} on it (allowed: {', '.join(allowed)})",
        )
    event = EventData(
        None,
        None,
        MACHINE,
        CollectorModel(c.state, c.reason),
        (),
        {"window_elapsed": window_elapsed},
    )
    for row in rows:
        for guard in row.guards:
            if not guard.test(event):
                return guard.rule, guard.explain
    raise AssertionError("a row whose guards hold was not taken")  # pragma: no cover


def _window(reason: Reason, settings: Settings) -> timedelta:
    """The dampening window a forwarding reason must hold for before it moves the collector."""
    if reason is Reason.FORWARD_FAILURE:
        return settings.degrade_after
    if reason is Reason.FORWARD_SUCCESSFUL:
        return settings.recover_after
    return timedelta(0)  # operator reasons are never dampened


def _due(c: CollectorState, settings: Settings) -> tuple[datetime, str] | None:
    """The collector's next timer: its window's deadline, else its staleness deadline."""
    times = []
    if c.pending is not None:
        times.append((c.pending.since + _window(c.pending.reason, settings), "dampening window"))
    if (
        not c.stale
        and c.heard_at is not None
        and c.state not in (State.DISABLED, State.NOT_SUPPORTED)
    ):
        times.append((c.heard_at + settings.staleness_limit, "staleness"))
    return min(times) if times else None


def _fire_due(
    state: AddonState, now: datetime, config: Config
) -> tuple[AddonState, tuple[Change, ...]]:
    changes: tuple[Change, ...] = ()
    while True:
        due = [
            (d, i)
            for i, c in enumerate(state.collectors)
            if (d := _due(c, config.settings[c.name]))
        ]
        if not due:
            return state, changes
        (at, cause), index = min(due)
        if at > now:
            return state, changes
        c = state.collectors[index]
        new = (
            _close_window(c, at)
            if cause == "dampening window"
            else replace(c, stale=True, changed_at=at)
        )
        changes = (*changes, Change(at, c.name, cause, _label(c), _label(new)))
        state = write_conditions(state.with_collector(new), config, at)


def _close_window(c: CollectorState, at: datetime) -> CollectorState:
    """The window ran out uninterrupted: the pending reason moves the collector at its deadline."""
    assert c.pending is not None
    model = CollectorModel(c.state, c.reason)
    moved = MACHINE.events[c.pending.reason.value].trigger(model, window_elapsed=True)
    assert moved, f"an open window in {c.state} on {c.pending.reason} has no transition"
    return replace(
        c,
        state=model.state,
        reason=c.pending.reason,
        message=c.pending.message,
        changed_at=at,
        pending=None,
    )


def _verdict(
    kind: VerdictKind,
    c: CollectorState,
    detail: str,
    *,
    rule: str | None = None,
    deadline: datetime | None = None,
) -> Verdict:
    return Verdict(kind, c.name, c.state, c.reason, detail, rule, deadline)


def _combined(verdicts: list[Verdict], config: Config) -> Verdict:
    """The operator's report to every collector: the refusal if any, else the strongest."""
    detail = "; ".join(f"{v.collector}: {v.kind.value} ({v.detail})" for v in verdicts)
    refused = next((v for v in verdicts if v.kind is VerdictKind.REFUSED), None)
    if refused is not None:
        return replace(refused, collector=None, detail=detail)
    strongest = max(verdicts, key=lambda v: STRENGTH.index(v.kind))
    primary = next((v for v in verdicts if v.collector == config.primary.name), strongest)
    return Verdict(strongest.kind, None, primary.state, primary.reason, detail)


def _label(c: CollectorState) -> str:
    reason = c.reason.value if c.reason else "no reason"
    stale = ", stale" if c.stale else ""
    return f"{c.state.value} ({reason}{stale})"
