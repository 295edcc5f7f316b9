"""The entry points: (state, event, now) -> new state, verdict, conditions to write, next wake-up.

`apply` judges a report, `observe_generation` takes the CR's `metadata.generation`,
`observe_object` takes a watched object's change (docs/spec.md §8), `advance` lets time pass,
`start` rebuilds the state from the CR. Each first fires every timer due by
`now`, each at its own due time, so a report that races its timer is judged against the right
state. The rules themselves live in their own modules (`machines`, `dampening`, `staleness`,
`generations`, `health`, `aggregate`, `writing`); this one only orders them. The shell never
decides status.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from statemachines import dampening, generations, health, staleness
from statemachines.config import Config
from statemachines.evolve import evolve
from statemachines.machines import fire
from statemachines.outcome import Cause, Change, Outcome, Position, position_label
from statemachines.reports import STRENGTH, Report, Verdict, VerdictKind
from statemachines.settings import Settings
from statemachines.state import AddonState, CollectorState
from statemachines.stored import Stored, read_status
from statemachines.vocabulary import Rule, State
from statemachines.writing import shown, write_conditions

__all__ = [
    "advance",
    "apply",
    "next_wakeup",
    "observe_generation",
    "observe_object",
    "observe_result",
    "resume",
    "start",
]


def apply(state: AddonState, report: Report, now: datetime, *, config: Config) -> Outcome:
    """Judge `report` at `now`. A report without collector goes to every collector as one step:
    refused if any refuses (then nothing changes), else the strongest verdict of theirs."""
    before = state
    state, changes = _fire_due(state, now, config)
    names = [report.collector] if report.collector else [c.name for c in config.collectors]
    judged = [
        _judge(
            staleness.heard(state.collector(n), now),
            report,
            now,
            settings=config.settings[n],
            cr_generation=state.generation,
        )
        for n in names
    ]
    refused = any(v.kind is VerdictKind.REFUSED for _, v, _ in judged)
    for new, own, change in judged:
        old = state.collector(new.name)
        # Nothing changes on a refusal, but a refused report is a sign of life too (a collector
        # that refused is already only heard).
        after = new if not refused or own.kind is VerdictKind.REFUSED else staleness.heard(old, now)
        state = state.with_collector(after)
        if change is not None and not refused:
            changes = (*changes, change)
        elif old.stale:  # the report ended staleness: a visible change of its own
            changes = (*changes, _change(now, Cause.REPORT, old, after))
    verdict = judged[0][1] if len(judged) == 1 else _combined([j[1] for j in judged], config)
    pairs = zip(before.collectors, state.collectors, strict=True)
    if any(a is not b and shown(a) != shown(b) for a, b in pairs):
        state = write_conditions(state, config, now)
    return _outcome(before, state, verdict, changes, config)


def start(
    config: Config, now: datetime, *, status: dict[str, Any] | None = None, generation: int = 1
) -> AddonState:
    """The state a controller starts from: what `status` on the CR holds, else every collector
    fresh; conditions computed for the CR's `generation`. The staleness clocks start now."""
    return resume(config, now, status=status, generation=generation).state


def resume(
    config: Config, now: datetime, *, status: dict[str, Any] | None = None, generation: int = 1
) -> Stored:
    """`start`, and the stored fields it took as absent (docs/spec.md §6), for the shell to
    tell."""
    stored = read_status(status, config, now, generation)
    after, _ = _fire_due(stored.state, now, config)  # a window that ended while nobody ran
    return evolve(stored, state=write_conditions(after, config, now))


def advance(state: AddonState, now: datetime, *, config: Config) -> Outcome:
    """Let time pass to `now`: fire the dampening, staleness and `for` timers that are due."""
    after, changes = _fire_due(state, now, config)
    return _outcome(state, after, None, changes, config)


def observe_generation(
    state: AddonState, generation: int, now: datetime, *, config: Config
) -> Outcome:
    """The CR's `metadata.generation` as the shell read it; the conditions follow it. It never
    goes back (an older read is a stale one). The shell calls this before judging a report that
    is `generations.from_the_future`, after reading the CR again."""
    after = evolve(state, generation=max(state.generation, generation))
    return _outcome(state, write_conditions(after, config, now), None, (), config)


def observe_object(
    state: AddonState,
    resource: str,
    obj: Mapping[str, object] | None,
    now: datetime,
    *,
    config: Config,
) -> Outcome:
    """The watched object of the configured `resource` as the API server now returns it, or
    None once it is deleted (or was never found): its rule's result, counted with its `for`.
    Only what the collectors contribute to the aggregation can change, never their machines.
    Raises KeyError for a resource that is not configured (the shell's bug)."""
    result = health.evaluate(_resource(state, resource), obj)
    return observe_result(state, resource, result, now, config=config)


def observe_result(
    state: AddonState,
    resource: str,
    result: health.Result,
    now: datetime,
    *,
    config: Config,
) -> Outcome:
    """`observe_object` with the rule already applied to the object (`health.evaluate`): the
    shell evaluates a large object away from the one thread that judges reports, and hands in
    only the result. Raises KeyError for a resource that is not configured."""
    spec = _resource(state, resource)
    after, changes = _fire_due(state, now, config)
    counted = health.count(after.health.get(resource), result, now, for_=spec.for_)
    if counted != after.health.get(resource):
        after = write_conditions(
            evolve(after, health={**after.health, resource: counted}), config, now
        )
    return _outcome(state, after, None, changes, config)


def _resource(state: AddonState, name: str) -> health.Resource:
    spec = next((r for r in state.resources if r.name == name), None)
    if spec is None:
        raise KeyError(f"{name!r} is not a configured resource")
    return spec


def next_wakeup(state: AddonState, config: Config) -> datetime | None:
    """The earliest timer: a dampening window, a staleness deadline or a resource's `for`."""
    if state.wakeup is not None and state.wakeup[0] is config:
        return state.wakeup[1]
    due = [_due(c, config.settings[c.name]) for c in state.collectors]
    times = [d[0] for d in due if d is not None]
    held = health.next_wakeup(state.resources, state.health)
    if held is not None:
        times.append(held)
    earliest = min(times) if times else None
    object.__setattr__(state, "wakeup", (config, earliest))  # a cache on a frozen value
    return earliest


def _outcome(
    before: AddonState,
    after: AddonState,
    verdict: Verdict | None,
    changes: tuple[Change, ...],
    config: Config,
) -> Outcome:
    changed = (
        after.conditions != before.conditions
        or after.collectors != before.collectors
        or after.health != before.health
    )
    return Outcome(
        after, verdict, after.conditions if changed else None, next_wakeup(after, config), changes
    )


def _judge(
    c: CollectorState, report: Report, now: datetime, *, settings: Settings, cr_generation: int
) -> tuple[CollectorState, Verdict, Change | None]:
    """One collector's answer to one report: generation, heartbeat, machine, dampening."""
    refusal = generations.refusal(c, report.observed_generation, cr_generation)
    if refusal is not None:
        return c, _verdict(VerdictKind.REFUSED, c, refusal[1], rule=refusal[0]), None
    taken = generations.take(c, report.observed_generation)
    if report.version is not None:  # docs/spec.md §9: what the update installs, once Available
        taken = evolve(taken, desired_version=report.version)
    if c.reason is report.reason:
        new = dampening.cancel(taken)
        if report.message is not None and report.message != c.message:
            new = evolve(new, message=report.message)
        detail = "the current reason again" + (
            "; the open window is cancelled" if c.pending else ""
        )
        return new, _verdict(VerdictKind.HEARTBEAT, new, detail), None
    window = dampening.window(report.reason, settings)
    result = fire(c.state, c.reason, report.reason, window_elapsed=not window)
    if isinstance(result, State):
        new = taken.moved(result, report.reason, report.message or "", now)
        change = _change(now, Cause.REPORT, c, new)
        return new, _verdict(VerdictKind.ACCEPTED, new, change.label), change
    if result.rule is None:  # only the window is not over: it opens, or goes on
        new, deadline = dampening.hold(taken, report.reason, report.message or "", now, window)
        detail = f"{report.reason.value} must hold until the window ends; {_label(c)} until then"
        return new, _verdict(VerdictKind.PENDING, new, detail, deadline=deadline), None
    detail = f"{_label(c)} refuses {report.reason.value} [{result.rule}]: {result.why}"
    return c, _verdict(VerdictKind.REFUSED, c, detail, rule=result.rule), None


def _due(c: CollectorState, settings: Settings) -> tuple[datetime, Cause] | None:
    """The collector's next timer: the earlier of its window's and its staleness deadline."""
    window = dampening.deadline(c, settings)
    stale = staleness.deadline(c, settings)
    if stale is None:
        return None if window is None else (window, Cause.DAMPENING_WINDOW)
    if window is None or stale < window:  # a tie goes to the window, as min() of pairs did
        return stale, Cause.STALENESS
    return window, Cause.DAMPENING_WINDOW


def _fire_due(
    state: AddonState, now: datetime, config: Config
) -> tuple[AddonState, tuple[Change, ...]]:
    """Fire the timers due by `now` in time order, each at its own due time; a resource's `for`
    that ends no later than a collector's timer counts first."""
    changes: tuple[Change, ...] = ()
    while True:
        earliest = next_wakeup(state, config)
        if earliest is None or earliest > now:
            return state, changes
        held = health.next_wakeup(state.resources, state.health)
        due = [
            (d, i)
            for i, c in enumerate(state.collectors)
            if (d := _due(c, config.settings[c.name]))
        ]
        if held is not None and held <= now and (not due or held <= min(due)[0][0]):
            counted = health.advance(state.resources, state.health, held)
            state = write_conditions(evolve(state, health=counted), config, held)
            continue
        if not due or min(due)[0][0] > now:
            return state, changes
        (at, cause), index = min(due)
        c = state.collectors[index]
        if cause is Cause.DAMPENING_WINDOW:
            new = dampening.close(c, at)
        else:
            new = staleness.go_stale(c, at)
        changes = (*changes, _change(at, cause, c, new))
        state = write_conditions(state.with_collector(new), config, at)


def _change(at: datetime, cause: Cause, before: CollectorState, after: CollectorState) -> Change:
    return Change(at, before.name, cause, Position.of(before), Position.of(after))


def _label(c: CollectorState) -> str:
    return position_label(c.state, c.reason, c.stale)


def _verdict(
    kind: VerdictKind,
    c: CollectorState,
    detail: str,
    *,
    rule: Rule | None = None,
    deadline: datetime | None = None,
) -> Verdict:
    return Verdict(kind, c.name, c.state, c.reason, detail, rule, deadline)


def _combined(verdicts: list[Verdict], config: Config) -> Verdict:
    """The operator's report to every collector: the refusal if any, else the strongest."""
    detail = "; ".join(f"{v.collector}: {v.kind.value} ({v.detail})" for v in verdicts)
    refused = next((v for v in verdicts if v.kind is VerdictKind.REFUSED), None)
    if refused is not None:
        return evolve(refused, collector=None, detail=detail)
    strongest = max(verdicts, key=lambda v: STRENGTH.index(v.kind))
    primary = next((v for v in verdicts if v.collector == config.primary.name), strongest)
    return Verdict(strongest.kind, None, primary.state, primary.reason, detail)
