"""Scenarios: a YAML file of timed reports and expectations, run through the real core on a fake
clock and an in-memory store. Deterministic; used by `addon-status simulate`, tests and docs.

Validation names the step and the field (`steps[3].report.reason: unknown reason ...`).
Expectations are checked against the stored status, as a reader of the CR would see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import yaml
from pydantic import ValidationError

from statemachines.conditions import format_time
from statemachines.config import Config
from statemachines.core import Change, Outcome, advance, apply, next_wakeup, start
from statemachines.errors import ConfigError, ReportError, ScenarioError
from statemachines.reports import Report, Verdict, VerdictKind, parse_report
from statemachines.settings import Settings, format_duration, parse_duration
from statemachines.state import AddonState, to_status
from statemachines.vocabulary import ConditionType, Reason, State

__all__ = ["EPOCH", "Expectation", "Run", "Scenario", "Step", "TimelineRow", "load", "run"]

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)  # the fake clock's start; `at` is an offset from it

_TOP = {"name", "description", "settings", "collectorSettings", "collectors", "steps"}
_STEP = {"at", "report", "expect", "note"}
_EXPECT = {"verdict", "rule", "addon", "conditions", "collectors"}
_CONDITION = {"status", "reason", "message", "observedGeneration", "lastTransitionTime"}
_COLLECTOR = {"state", "stale", "pendingSince", *_CONDITION}


@dataclass(frozen=True)
class Expectation:
    verdict: VerdictKind | None = None
    rule: str | None = None
    addon: ConditionType | None = None
    conditions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    collectors: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Step:
    index: int
    at: timedelta
    report: Report | None
    expect: Expectation | None
    note: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    config: Config
    steps: tuple[Step, ...]


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


def load(text: str, *, source: str = "<scenario>") -> Scenario:
    """Parse and validate a scenario. Raises ScenarioError naming where the problem is."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else source
        raise ScenarioError(where, f"not valid YAML: {getattr(error, 'problem', error)}") from error
    if not isinstance(raw, dict):
        raise ScenarioError("", "a scenario is a mapping with `steps`")
    _no_unknown(raw, _TOP, "")
    config = _config(raw)
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        raise ScenarioError("steps", "required, a non-empty list")
    steps: list[Step] = []
    for index, step_raw in enumerate(steps_raw):
        step = _step(step_raw, index, config)
        if steps and step.at < steps[-1].at:
            raise ScenarioError(f"steps[{index}].at", "goes back in time; `at` never decreases")
        steps.append(step)
    name = str(raw.get("name", source))
    return Scenario(name, str(raw.get("description", "")), config, tuple(steps))


def _no_unknown(raw: Mapping[str, Any], known: set[str], where: str) -> None:
    for key in raw:
        if key not in known:
            path = f"{where}.{key}" if where else str(key)
            raise ScenarioError(path, f"unknown key; expected one of {', '.join(sorted(known))}")


def _config(raw: Mapping[str, Any]) -> Config:
    try:
        settings = Settings.model_validate(raw.get("settings") or {})
    except ValidationError as error:
        detail = error.errors()[0]
        key = ".".join(str(p) for p in detail["loc"])
        raise ScenarioError(f"settings.{key}" if key else "settings", detail["msg"]) from error
    collectors = raw.get("collectors")
    if collectors is not None and not (
        isinstance(collectors, list) and all(isinstance(c, str) for c in collectors)
    ):
        raise ScenarioError("collectors", "a list of collector names")
    per = raw.get("collectorSettings") or {}
    if not isinstance(per, dict) or not all(isinstance(v, dict) for v in per.values()):
        raise ScenarioError("collectorSettings", "a mapping of collector name to settings")
    try:
        return Config.create(collectors=collectors, settings=settings, collector_settings=per)
    except ConfigError as error:
        where, _, problem = str(error).partition(": ")
        raise ScenarioError(where, problem) from error


def _step(raw: object, index: int, config: Config) -> Step:
    where = f"steps[{index}]"
    if not isinstance(raw, dict):
        raise ScenarioError(
            where, "a step is a mapping with `at` and a `report`, an `expect` or both"
        )
    _no_unknown(raw, _STEP, where)
    if "at" not in raw:
        raise ScenarioError(f"{where}.at", "required: the offset from the start, e.g. 3m")
    try:
        at = parse_duration(raw["at"])
    except ValueError as error:
        raise ScenarioError(f"{where}.at", str(error)) from error
    if "report" not in raw and "expect" not in raw:
        raise ScenarioError(where, "a step needs a `report`, an `expect` or both")
    report = None
    if "report" in raw:
        try:
            report = parse_report(raw["report"], config)
        except ReportError as error:
            raise ScenarioError(_join(f"{where}.report", error.field), error.problem) from error
    expect = _expectation(raw["expect"], f"{where}.expect", config) if "expect" in raw else None
    if expect is not None and report is None and (expect.verdict or expect.rule):
        raise ScenarioError(f"{where}.expect.verdict", "this step has no report to give a verdict")
    return Step(index, at, report, expect, str(raw.get("note", "")))


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if name else prefix


def _expectation(raw: object, where: str, config: Config) -> Expectation:
    if not isinstance(raw, dict):
        raise ScenarioError(where, "a mapping")
    _no_unknown(raw, _EXPECT, where)
    verdict = _enum(VerdictKind, raw.get("verdict"), f"{where}.verdict")
    addon = _enum(ConditionType, raw.get("addon"), f"{where}.addon")
    types = {*ConditionType, *(c.condition_type for c in config.collectors)}
    aliases = config.profile.aliases
    conditions = _table(
        raw.get("conditions"), f"{where}.conditions", names=types, keys=_CONDITION, aliases=aliases
    )
    names = {c.name for c in config.collectors}
    collectors = _table(
        raw.get("collectors"), f"{where}.collectors", names=names, keys=_COLLECTOR, aliases=aliases
    )
    rule = raw.get("rule")
    return Expectation(verdict, None if rule is None else str(rule), addon, conditions, collectors)


def _enum(kind: Any, value: object, where: str) -> Any:
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError as error:
        known = ", ".join(m.value for m in kind)
        raise ScenarioError(where, f"{value!r} is not one of {known}") from error


def _table(
    raw: object,
    where: str,
    *,
    names: set[str],
    keys: set[str],
    aliases: Mapping[str, Reason],
) -> dict[str, dict[str, Any]]:
    """A mapping name -> expected fields, each field checked and normalised."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScenarioError(where, "a mapping")
    out: dict[str, dict[str, Any]] = {}
    for name, fields in raw.items():
        path = f"{where}.{name}"
        if name not in names:
            raise ScenarioError(path, f"unknown; expected one of {', '.join(sorted(names))}")
        if not isinstance(fields, dict):
            raise ScenarioError(path, "a mapping of field to expected value")
        _no_unknown(fields, keys, path)
        out[name] = {k: _expected_value(k, v, f"{path}.{k}", aliases) for k, v in fields.items()}
    return out


def _expected_value(key: str, value: object, where: str, aliases: Mapping[str, Reason]) -> Any:
    if key == "status":
        text = (
            {True: "True", False: "False"}.get(value, value) if isinstance(value, bool) else value
        )
        return _enum_text(("True", "False", "Unknown"), text, where)
    if key == "state":
        return _enum(State, value, where).value
    if key == "reason":
        reason = aliases.get(value, value) if isinstance(value, str) else value
        return _enum(Reason, reason, where).value
    if key in ("lastTransitionTime", "pendingSince"):
        return _expected_time(value, where)
    if key == "observedGeneration" and not (isinstance(value, int) and not isinstance(value, bool)):
        raise ScenarioError(where, "an integer")
    if key == "stale" and not isinstance(value, bool):
        raise ScenarioError(where, "true or false")
    if key == "message" and not isinstance(value, str):
        raise ScenarioError(where, "a string")
    return value


def _enum_text(allowed: tuple[str, ...], value: object, where: str) -> str:
    if value not in allowed:
        raise ScenarioError(where, f"{value!r} is not one of {', '.join(allowed)}")
    return str(value)


def _expected_time(value: object, where: str) -> str:
    """An offset from the start (`13m`), or an RFC 3339 time; compared in whole seconds."""
    if isinstance(value, datetime):
        return format_time(value)
    try:
        return format_time(EPOCH + parse_duration(value))
    except ValueError:
        try:
            return format_time(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
        except ValueError as error:
            raise ScenarioError(where, f"{value!r} is neither an offset nor a time") from error


def run(scenario: Scenario) -> Run:
    """Play every step: timers due by its `at` first, then its report, then its expectations."""
    config = scenario.config
    state = start(config, EPOCH)
    status, writes = to_status(state), 1
    rows: list[TimelineRow] = []
    for step in scenario.steps:
        now = EPOCH + step.at
        # Timers due by `now` fire first, each at its own due time, as the shell's timer would.
        while (wakeup := next_wakeup(state, config)) is not None and wakeup <= now:
            ticked = advance(state, wakeup, config=config)
            state = ticked.state
            if ticked.changed:
                status, writes = to_status(state), writes + 1
            for change in ticked.changes:
                row = _row(
                    change.at - EPOCH,
                    None,
                    event=_timer_event(change),
                    verdict=None,
                    state=state,
                    written=ticked.changed,
                )
                rows.append(row)
        outcome: Outcome | None = None
        if step.report is not None:
            outcome = apply(state, step.report, now, config=config)
            state = outcome.state
            if outcome.changed:
                status, writes = to_status(state), writes + 1
        failures = _check(step, outcome.verdict if outcome else None, status, config)
        event = _report_event(step.report) if step.report else "expect"
        if step.note:
            event = f"{event}  # {step.note}"
        written = bool(outcome and outcome.changed)
        verdict = outcome.verdict if outcome else None
        rows.append(
            _row(
                step.at,
                step.index,
                event=event,
                verdict=verdict,
                state=state,
                written=written,
                failures=failures,
            )
        )
    return Run(scenario, tuple(rows), status, writes)


def _row(
    at: timedelta,
    step: int | None,
    *,
    event: str,
    verdict: Verdict | None,
    state: AddonState,
    written: bool,
    failures: tuple[str, ...] = (),
) -> TimelineRow:
    true = next(c for c in state.conditions if c.type in set(ConditionType) and c.status == "True")
    collectors = {}
    for c in state.collectors:
        reason = "ReportsStale" if c.stale else (c.reason.value if c.reason else "no reason")
        pending = f", {c.pending.reason.value} pending" if c.pending else ""
        collectors[c.name] = f"{c.state.value} ({reason}{pending})"
    return TimelineRow(
        at, step, event, verdict, f"{true.type} ({true.reason})", collectors, written, failures
    )


def _timer_event(change: Change) -> str:
    return f"timer: {change.collector} {change.cause} ran out: {change.before} -> {change.after}"


def _report_event(report: Report) -> str:
    who = report.collector or "endpoint-operator (all collectors)"
    text = f"{who}: {report.reason.value}"
    if report.message:
        text += f" {report.message[:60]!r}"
    if report.observed_generation is not None:
        text += f" gen {report.observed_generation}"
    return text


def _check(
    step: Step, verdict: Verdict | None, status: Mapping[str, Any], config: Config
) -> tuple[str, ...]:
    expect = step.expect
    if expect is None:
        return ()
    where = f"steps[{step.index}] (at {format_duration(step.at)})"
    failures: list[str] = []
    if expect.verdict is not None and verdict is not None and verdict.kind is not expect.verdict:
        failures.append(
            f"{where}: expected verdict {expect.verdict.value}, got {verdict.kind.value}"
            f" ({verdict.detail})"
        )
    if expect.rule is not None and verdict is not None and verdict.rule != expect.rule:
        failures.append(f"{where}: expected rule {expect.rule}, got {verdict.rule}")
    conditions = {c["type"]: c for c in status["conditions"]}
    if expect.addon is not None:
        true = [t for t in ConditionType if conditions.get(t, {}).get("status") == "True"]
        if true != [expect.addon]:
            got = f"{true[0].value} ({conditions[true[0]]['reason']})" if true else "none True"
            failures.append(f"{where}: expected addon {expect.addon.value}, got {got}")
    for type_, fields in expect.conditions.items():
        failures += _compare(f"{where}: condition {type_}", fields, conditions.get(type_, {}))
    collectors = {c["name"]: c for c in status["collectors"]}
    spec_types = {c.name: c.condition_type for c in config.collectors}
    for name, fields in expect.collectors.items():
        stored = collectors.get(name, {})
        condition = conditions.get(spec_types.get(name, ""), {})
        actual = {
            **{k: condition.get(k) for k in _CONDITION},
            "state": stored.get("state"),
            "stale": bool(stored.get("stale", False)),
            "pendingSince": _whole(stored.get("pendingSince")),
        }
        failures += _compare(f"{where}: collector {name}", fields, actual)
    return tuple(failures)


def _compare(what: str, expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
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
