"""A scenario played through the real core on a fake clock and an in-memory store.

Deterministic; used by `addon-status simulate`, tests and docs. Expectations are checked
against the stored status, as a reader of the CR would see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from statemachines.conditions import format_time, standard_true, standard_true_in
from statemachines.config import Config
from statemachines.core import (
    advance,
    apply,
    next_wakeup,
    observe_generation,
    observe_object,
    start,
)
from statemachines.outcome import Change, Outcome
from statemachines.reports import Report, Verdict
from statemachines.scenario import EPOCH, Expectation, Scenario, Step
from statemachines.settings import format_duration
from statemachines.state import AddonState
from statemachines.stored import to_status
from statemachines.vocabulary import Reason

__all__ = ["Run", "TimelineRow", "check", "run"]


@dataclass(frozen=True)
class TimelineRow:
    at: timedelta
    step: int | None  # None for a timer that fired between steps
    event: str
    verdict: Verdict | None
    addon: str  # the standard type that is True, with its reason
    collectors: Mapping[str, str]  # name -> "State (Reason)"
    written: bool  # the stored status changed
    failures: tuple[str, ...] = ()


@dataclass(frozen=True)
class Run:
    scenario: Scenario
    timeline: tuple[TimelineRow, ...]
    status: Mapping[str, Any]  # the stored status at the end
    writes: int

    @property
    def failures(self) -> list[str]:
        return [f for row in self.timeline for f in row.failures]

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass
class _Store:
    """The CR's status as last written, and how many writes it took."""

    status: Mapping[str, Any]
    writes: int = 1

    def take(self, outcome: Outcome) -> bool:
        if outcome.changed:
            self.status, self.writes = to_status(outcome.state), self.writes + 1
        return outcome.changed


def run(scenario: Scenario) -> Run:
    """Play every step: timers due by its `at` first, then its generation change, then its
    object change, then its report, then its expectations."""
    config = scenario.config
    state = start(config, EPOCH, generation=scenario.generation)
    store = _Store(to_status(state))
    rows: list[TimelineRow] = []
    for step in scenario.steps:
        now = EPOCH + step.at
        # Timers due by `now` fire first, each at its own due time, as the shell's timer would.
        while (wakeup := next_wakeup(state, config)) is not None and wakeup <= now:
            ticked = advance(state, wakeup, config=config)
            state = ticked.state
            written = store.take(ticked)
            for change in ticked.changes:
                event = _timer_event(change)
                row = _row(change.at - EPOCH, None, event, state, config, written=written)
                rows.append(row)
            if written and not ticked.changes:  # only a resource's `for` ran out
                event = "timer: a held-back health result counts (for ran out)"
                rows.append(_row(wakeup - EPOCH, None, event, state, config, written=written))
        written, events = False, []
        if step.generation is not None:
            moved = observe_generation(state, step.generation, now, config=config)
            state, written = moved.state, store.take(moved)
            events.append(f"CR generation {step.generation}")
        if step.object is not None:
            name, value = step.object.resource, step.object.value
            changed = observe_object(state, name, value, now, config=config)
            state, written = changed.state, store.take(changed) or written
            events.append(f"object {name} {'deleted' if value is None else 'changed'}")
        outcome: Outcome | None = None
        if step.report is not None:
            outcome = apply(state, step.report, now, config=config)
            state, written = outcome.state, store.take(outcome) or written
            events.append(_report_event(step.report))
        verdict = outcome.verdict if outcome else None
        failures = check(
            step, store.status, config, verdict=verdict.to_api(config.profile) if verdict else None
        )
        event = "; ".join(events) or "expect"
        if step.note:
            event = f"{event}  # {step.note}"
        row = _row(
            step.at,
            step.index,
            event,
            state,
            config,
            written=written,
            verdict=verdict,
            failures=failures,
        )
        rows.append(row)
    return Run(scenario, tuple(rows), store.status, store.writes)


def _row(
    at: timedelta,
    step: int | None,
    event: str,
    state: AddonState,
    config: Config,
    *,
    written: bool,
    verdict: Verdict | None = None,
    failures: tuple[str, ...] = (),
) -> TimelineRow:
    """A row of the timeline, in the names the profile writes."""
    true = standard_true(state.conditions)
    assert true is not None  # the core writes exactly one
    name = config.profile.name_of
    collectors = {}
    for c in state.collectors:
        reason = (
            name(Reason.REPORTS_STALE) if c.stale else (name(c.reason) if c.reason else "no reason")
        )
        pending = f", {name(c.pending.reason)} pending" if c.pending else ""
        collectors[c.name] = f"{c.state.value} ({reason}{pending})"
    return TimelineRow(
        at, step, event, verdict, f"{true.type} ({true.reason})", collectors, written, failures
    )


def _timer_event(change: Change) -> str:
    return f"timer: {change.collector} {change.cause.value} ran out: {change.label}"


def _report_event(report: Report) -> str:
    who = report.collector or "endpoint-operator (all collectors)"
    text = f"{who}: {report.reason.value}"
    if report.message:
        text += f" {report.message[:60]!r}"
    if report.observed_generation is not None:
        text += f" gen {report.observed_generation}"
    if report.version is not None:
        text += f" version {report.version}"
    return text


def check(
    step: Step,
    status: Mapping[str, Any],
    config: Config,
    *,
    verdict: Mapping[str, Any] | None,
) -> tuple[str, ...]:
    """What of `step.expect` does not hold: `status` is the CR's status as stored, `verdict` the
    answer to the step's report as the report API sends it (`Verdict.to_api`). The same check
    serves `simulate` and a scenario played end to end against a real CR."""
    expect = step.expect
    if expect is None:
        return ()
    where = f"steps[{step.index}] (at {format_duration(step.at)})"
    failures: list[str] = []
    if verdict is not None:
        if expect.verdict is not None and verdict.get("verdict") != expect.verdict.value:
            failures.append(
                f"{where}: expected verdict {expect.verdict.value}, got {verdict.get('verdict')}"
                f" ({verdict.get('detail')})"
            )
        if expect.rule is not None and verdict.get("rule") != expect.rule.value:
            failures.append(
                f"{where}: expected rule {expect.rule.value}, got {verdict.get('rule')}"
            )
    conditions = {c["type"]: c for c in status.get("conditions") or []}
    if expect.addon is not None:
        true = standard_true_in(status.get("conditions"))
        if [c["type"] for c in true] != [expect.addon]:
            got = f"{true[0]['type']} ({true[0]['reason']})" if true else "none True"
            failures.append(f"{where}: expected addon {expect.addon.value}, got {got}")
    for type_, wanted in expect.conditions.items():
        failures += _compare(f"{where}: condition {type_}", wanted.fields(), conditions.get(type_))
    collectors = {c["name"]: c for c in status.get("collectors") or []}
    spec_types = {c.name: c.condition_type for c in config.collectors}
    for name, fields in expect.collectors.items():
        stored = collectors.get(name, {})
        actual = {
            **conditions.get(spec_types.get(name, ""), {}),
            "state": stored.get("state"),
            "stale": bool(stored.get("stale", False)),
            "pendingSince": _whole(stored.get("pendingSince")),
        }
        failures += _compare(f"{where}: collector {name}", fields.fields(), actual)
    resources = {r.get("name"): r for r in status.get("resources") or []}
    for name, health in expect.resources.items():
        entry = resources.get(name) or {}
        healthy: dict[str, Any] = next(iter(entry.get("conditions") or []), {})
        actual = {**healthy, "pending": (entry.get("pending") or {}).get("reason")}
        failures += _compare(f"{where}: resource {name}", health.fields(), actual)
    return tuple(failures + _story(where, expect, status))


def _story(where: str, expect: Expectation, status: Mapping[str, Any]) -> list[str]:
    """Sections 9 and 10: versions, history (its newest entries), related objects (each must be
    present), the last known good generation."""
    failures: list[str] = []
    installed = {v["name"]: v["version"] for v in status.get("versions") or []}
    for name, version in expect.versions.items():
        if installed.get(name) != version:
            got = installed.get(name)
            failures.append(f"{where}: expected version of {name} {version!r}, got {got!r}")
    if expect.history is not None:
        history = list(status.get("history") or [])
        if len(history) < len(expect.history):
            failures.append(
                f"{where}: expected at least {len(expect.history)} history entries, "
                f"got {len(history)}"
            )
        for index, (wanted, entry) in enumerate(zip(expect.history, history, strict=False)):
            failures += _compare(f"{where}: history[{index}]", wanted.fields(), entry)
    related = list(status.get("relatedObjects") or [])
    for wanted_object in expect.related_objects:
        fields = wanted_object.fields()
        if not any(all(o.get(k) == v for k, v in fields.items()) for o in related):
            failures.append(f"{where}: expected a related object {fields}, got {related}")
    if expect.last_known_good is not None:
        good = status.get("lastKnownGood")
        if good is None:
            failures.append(f"{where}: expected lastKnownGood, got none")
        else:
            good = {**good, "since": _whole(good.get("since"))}
            failures += _compare(f"{where}: lastKnownGood", expect.last_known_good.fields(), good)
    return failures


def _compare(what: str, expected: Mapping[str, Any], actual: Mapping[str, Any] | None) -> list[str]:
    actual = actual or {}
    wrong = []
    for key, value in expected.items():
        got = actual.get(key)
        if key == "lastTransitionTime":
            got = _whole(got)
        if got != value:
            wrong.append(f"{what}: expected {key} {value!r}, got {got!r}")
    return wrong


def _whole(text: object) -> str | None:
    if not isinstance(text, str):
        return None
    return format_time(datetime.fromisoformat(text.replace("Z", "+00:00")))
