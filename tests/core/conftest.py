"""Shared helpers of the core's tests: a run on an explicit clock, ways to reach a collector
state through the public entry points, and the one assert helper every rule table uses.

Everything here drives the core the way the shell does: `start`, `parse_report` + `apply`,
`advance`. Time is a plain UTC `datetime` moved by the test; no wall clock, no freezegun.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from statemachines.conditions import Condition, find_condition
from statemachines.config import Config
from statemachines.core import advance, apply, observe_generation, start
from statemachines.outcome import Outcome
from statemachines.reports import Verdict, VerdictKind, parse_report
from statemachines.settings import Settings
from statemachines.state import AddonState, CollectorState
from statemachines.stored import to_status
from statemachines.vocabulary import SEED, ConditionType, Profile, Reason, State
from tests.support import MC, UWL

__all__ = [
    "MC",
    "MIN",
    "SEC",
    "STANDARD",
    "T0",
    "UWL",
    "Run",
    "Target",
    "expect",
    "reach",
    "standard_true",
]

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
SEC = timedelta(seconds=1)
MIN = timedelta(minutes=1)
STANDARD = tuple(ConditionType)


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


@dataclass
class Run:
    """One addon on a fake clock: the current state, the time, and the last outcome."""

    config: Config
    state: AddonState
    now: datetime
    outcomes: list[Outcome] = field(default_factory=list)

    @classmethod
    def begin(
        cls,
        *,
        collectors: Sequence[str] | None = None,
        settings: Mapping[str, Any] | None = None,
        collector_settings: Mapping[str, Mapping[str, Any]] | None = None,
        at: datetime = T0,
        generation: int = 1,
        profile: Profile = SEED,
    ) -> Run:
        config = Config.create(
            profile=profile,
            collectors=collectors,
            settings=Settings.model_validate(dict(settings or {})),
            collector_settings=collector_settings,
        )
        return cls(config, start(config, at, generation=generation), at)

    @property
    def last(self) -> Outcome:
        return self.outcomes[-1]

    def at(self, moment: timedelta | datetime) -> Run:
        """Move the clock to `T0 + moment` (or to `moment`); never backwards."""
        target = T0 + moment if isinstance(moment, timedelta) else moment
        assert target >= self.now, f"the clock would go back from {self.now} to {target}"
        self.now = target
        return self

    def report(
        self,
        reason: str | Reason,
        collector: str | None = MC,
        message: str | None = None,
        *,
        generation: int | None = None,
        version: str | None = None,
    ) -> Outcome:
        """Send a report as decoded JSON, through `parse_report` and `apply`."""
        raw: dict[str, Any] = {"reason": str(reason)}
        if collector is not None:
            raw["collector"] = collector
        if message is not None:
            raw["message"] = message
        if generation is not None:
            raw["observedGeneration"] = generation
        if version is not None:
            raw["version"] = version
        outcome = apply(self.state, parse_report(raw, self.config), self.now, config=self.config)
        return self._took(outcome)

    def advance(self, moment: timedelta | datetime | None = None) -> Outcome:
        if moment is not None:
            self.at(moment)
        return self._took(advance(self.state, self.now, config=self.config))

    def observe(self, generation: int) -> Outcome:
        """The shell read the addon CR's `metadata.generation`."""
        return self._took(observe_generation(self.state, generation, self.now, config=self.config))

    def restart(self, moment: timedelta | datetime | None = None) -> Run:
        """A new controller process: the status goes through JSON and `start` reads it back."""
        if moment is not None:
            self.at(moment)
        stored = json.loads(json.dumps(to_status(self.state)))
        self.state = start(self.config, self.now, status=stored, generation=self.state.generation)
        return self

    def play(self, steps: Sequence[tuple[Any, ...]]) -> Outcome | None:
        """Run `(offset, reason[, collector[, message]])` steps; reason None lets time pass."""
        outcome = None
        for offset, reason, *rest in steps:
            self.at(offset)
            outcome = self.advance() if reason is None else self.report(reason, *rest)
        return outcome

    def _took(self, outcome: Outcome) -> Outcome:
        self.outcomes.append(outcome)
        self.state = outcome.state
        return outcome

    def collector(self, name: str = MC) -> CollectorState:
        return self.state.collector(name)

    def condition(self, type_: str) -> Condition:
        found = find_condition(self.state.conditions, type_)
        assert found is not None, f"no {type_} condition in {self.state.conditions}"
        return found

    def collector_condition(self, name: str = MC) -> Condition:
        spec = self.config.spec(name)
        assert spec is not None
        return self.condition(spec.condition_type)

    def addon(self) -> ConditionType:
        return standard_true(self.state.conditions)


def standard_true(conditions: Sequence[Condition]) -> ConditionType:
    """The one standard type that is True (asserts that there is exactly one)."""
    true = [ConditionType(c.type) for c in conditions if c.type in STANDARD and c.status == "True"]
    assert len(true) == 1, f"expected exactly one standard condition True, got {true}"
    return true[0]


def expect(
    run: Run,
    outcome: Outcome | None = None,
    *,
    collector: str = MC,
    verdict: VerdictKind = UNSET,
    rule: str | None = UNSET,
    deadline: datetime | None = UNSET,
    state: State = UNSET,
    reason: Reason | None = UNSET,
    stale: bool = UNSET,
    status: str = UNSET,
    condition_reason: str = UNSET,
    message: str = UNSET,
    changed_at: datetime = UNSET,
    addon: ConditionType = UNSET,
    addon_reason: Reason = UNSET,
    written: bool = UNSET,
) -> None:
    """The one assert helper of the rule tables: checks only what it is given.

    `state`, `reason`, `stale` are the machine underneath; `status`, `condition_reason`,
    `message`, `changed_at` the collector's condition on the CR; `addon`, `addon_reason` the
    standard condition that is True; `written` whether the outcome asks for a status write;
    `verdict`, `rule`, `deadline` the verdict of `outcome` (default: the run's last outcome).
    """
    outcome = outcome if outcome is not None else run.last
    got = run.collector(collector)
    own = run.collector_condition(collector)

    def judged() -> Verdict:
        assert outcome is not None and outcome.verdict is not None, "the outcome has no verdict"
        return outcome.verdict

    actual: dict[str, Callable[[], object]] = {
        "verdict": lambda: judged().kind,
        "rule": lambda: judged().rule,
        "deadline": lambda: judged().deadline,
        "state": lambda: got.state,
        "reason": lambda: got.reason,
        "stale": lambda: got.stale,
        "status": lambda: own.status,
        "condition_reason": lambda: own.reason,
        "message": lambda: own.message,
        "changed_at": lambda: own.last_transition_time,
        "addon": run.addon,
        "addon_reason": lambda: run.condition(run.addon()).reason,
        "written": lambda: outcome.conditions is not None,
    }
    wanted = {
        "verdict": verdict,
        "rule": rule,
        "deadline": deadline,
        "state": state,
        "reason": reason,
        "stale": stale,
        "status": status,
        "condition_reason": condition_reason,
        "message": message,
        "changed_at": changed_at,
        "addon": addon,
        "addon_reason": addon_reason,
        "written": written,
    }
    for key, want in wanted.items():
        if want is UNSET:
            continue
        value = actual[key]()
        assert value == want, (
            f"{key}: expected {want!r}, got {value!r}\n"
            f"verdict: {outcome.verdict}\ncollector: {got}\ncondition: {own}"
        )


@dataclass(frozen=True)
class Target:
    """Where one collector should end up: its last reason (None: never reported), and stale."""

    reason: Reason | None
    stale: bool = False

    def __str__(self) -> str:
        name = self.reason.value if self.reason else "none"
        return f"stale({name})" if self.stale else name


def reach(
    targets: Mapping[str, Target],
    *,
    order: Sequence[str] | None = None,
    settings: Mapping[str, Any] | None = None,
) -> Run:
    """A run whose collectors are at `targets`, reached by reports at T0 and one minute passing.

    A collector meant to be stale gets `staleAfter: 1m`; the others keep the default (15m), so
    only the stale ones run out at T0 + 1m. Every reason in `targets` is reached in one report
    from `Progressing`, which the machine allows for each of them without dampening.
    """
    names = list(order) if order is not None else list(targets)
    per = {n: {"staleAfter": "1m"} for n in names if targets[n].stale}
    run = Run.begin(collectors=names, settings=settings, collector_settings=per)
    for name in names:
        reason = targets[name].reason
        if reason is not None:
            run.report(reason, name, f"{name} says {reason.value}")
    run.advance(MIN)
    for name in names:
        assert run.collector(name).stale is targets[name].stale, run.collector(name)
    return run
