"""Invariants of the core, property-based (hypothesis), over states reached by random report
sequences on a random clock:

- aggregation does not depend on the order of the collectors (sections 5 and 6);
- forwarding that never stays failing for a whole `degradeAfter` never leaves Available, and an
  alternating signal shorter than the window never crosses it, in either direction
  (docs/spec.md §3);
- a refused report changes no collector's state or reason, and writes nothing (docs/spec.md §2);
- no report raises the generation the core works at, whatever it claims (docs/spec.md §6);
- a state survives the CR's status: to_status -> JSON -> from_status / start (sections 3, 6);
- every written condition keeps the writing rules and the vocabulary (docs/spec.md §6);
- the conditions are always those of the state, though `apply` skips what cannot change them.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemachines.core import start
from statemachines.reports import VerdictKind
from statemachines.stored import from_status, to_status
from statemachines.vocabulary import READY, SEED, Actor, ConditionType, ReadyReason, Reason, State
from statemachines.writing import write_conditions
from tests.core.conftest import MC, STANDARD, T0, UWL, Run, Target, reach, standard_true
from tests.names import DM, FF, FS, NS, UF, US, S, T, V
from tests.properties import examples

REPORTABLE = [FF, FS, UF, US, DM, NS]
REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
WHOLE_SECONDS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

PROPERTY = settings(
    max_examples=examples(120),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)

# ---------------------------------------------------------------- strategies

SETTINGS = st.fixed_dictionaries(
    {
        "degradeAfter": st.sampled_from(["0s", "90s", "10m"]),
        "recoverAfter": st.sampled_from(["0s", "2m"]),
        "staleAfter": st.sampled_from(["4m", "15m"]),
    }
)
# (milliseconds since the previous step, reason or None for time passing, collector or None
#  for every collector, message, observedGeneration: up to one past the CR's)
CR_GENERATION = 4
STEP = st.tuples(
    st.integers(0, 6 * 60_000),
    st.one_of(st.none(), st.sampled_from(REPORTABLE)),
    st.sampled_from([MC, UWL, None]),
    st.sampled_from(["", "sent", "503", "bad image"]),
    st.one_of(st.none(), st.integers(1, CR_GENERATION + 1)),
)
STEPS = st.lists(STEP, max_size=14)
ORDERS = st.sampled_from([[MC], [MC, UWL], [UWL, MC], [UWL]])


def _say(run: Run, step: tuple[Any, ...]) -> VerdictKind | None:
    """Play one random step on `run`, made well-formed for its configuration."""
    millis, reason, collector, message, generation = step
    run.at(run.now + timedelta(milliseconds=millis))
    if reason is None:
        run.advance()
        return None
    names = sorted(c.name for c in run.config.collectors)  # not the configured order
    if collector not in names and (
        collector is not None or SEED.spec(reason).reported_by is Actor.METRICS_COLLECTOR
    ):
        collector = names[0]
    outcome = run.report(reason, collector, message, generation=generation)
    assert outcome.verdict is not None
    return outcome.verdict.kind


def _reached(order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]]) -> Run:
    run = Run.begin(collectors=order, settings=config, generation=CR_GENERATION)
    for step in steps:
        _say(run, step)
    return run


# ---------------------------------------------------------------- aggregation order


TARGETS = st.one_of(
    st.builds(Target, st.sampled_from([None, FF, FS, UF, US, DM, NS])),
    st.builds(Target, st.sampled_from([None, FF, FS, UF, US]), st.just(True)),
)


@PROPERTY
@given(mc=TARGETS, uwl=TARGETS)
def test_aggregation_does_not_depend_on_collector_order_for_any_pair(
    mc: Target, uwl: Target
) -> None:
    """The same two collector states, configured in either order, give equal standard
    conditions (type, status, reason, message, times)."""
    one = reach({MC: mc, UWL: uwl}, order=[MC, UWL])
    other = reach({MC: mc, UWL: uwl}, order=[UWL, MC])
    assert _standard(one) == _standard(other)


@PROPERTY
@given(config=SETTINGS, steps=STEPS)
def test_aggregation_does_not_depend_on_collector_order_along_any_history(
    config: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    """The same reports, configured in either order: after every step the collectors agree,
    the verdicts agree and the standard conditions are equal."""
    one = Run.begin(collectors=[MC, UWL], settings=config, generation=CR_GENERATION)
    other = Run.begin(collectors=[UWL, MC], settings=config, generation=CR_GENERATION)
    for step in steps:
        assert _say(one, step) is _say(other, step)
        assert sorted(one.state.collectors, key=lambda c: c.name) == sorted(
            other.state.collectors, key=lambda c: c.name
        )
        assert _standard(one) == _standard(other)


def _standard(run: Run) -> list[Any]:
    return [run.condition(t) for t in STANDARD]


# ---------------------------------------------------------------- dampening


@PROPERTY
@given(data=st.data())
def test_short_forwarding_failures_never_leave_available(data: st.DataObject) -> None:
    """Bursts of ForwardFailure reports (and timers checked inside them), each burst ended by a
    ForwardSuccessful before `degradeAfter` has passed: the collector and the addon stay
    Available throughout, whatever the window's length."""
    window = data.draw(st.integers(1, 20 * 60), label="degradeAfter (s)")
    run = Run.begin(collectors=[MC], settings={"degradeAfter": f"{window}s", "staleAfter": "24h"})
    run.report(FS, MC, "sent")
    now = T0
    for _ in range(data.draw(st.integers(1, 6), label="bursts")):
        now += timedelta(seconds=data.draw(st.integers(0, 30 * 60), label="quiet (s)"))
        run.advance(now)
        _still_available(run)
        length = data.draw(st.integers(0, window - 1), label="burst (s)")
        inside = data.draw(st.lists(st.integers(0, length), max_size=5), label="inside (s)")
        run.at(now).report(FF, MC, "503")
        _still_available(run)
        for offset in sorted(inside):
            run.at(now + timedelta(seconds=offset))
            if data.draw(st.booleans(), label="report, else timer"):
                run.report(FF, MC, "503 again")
            else:
                run.advance()
            _still_available(run)
        now += timedelta(seconds=length)
        run.at(now).report(FS, MC, "sent again")
        _still_available(run)
    run.advance(now + timedelta(hours=2))
    _still_available(run)


def _still_available(run: Run) -> None:
    c = run.collector()
    assert (c.state, c.reason) == (S.AVAILABLE, FS), c
    assert standard_true(run.state.conditions) is T.AVAILABLE


@pytest.mark.parametrize(
    ("window_setting", "signal", "kept", "never"),
    [
        pytest.param("degradeAfter", [FF, FS], (S.AVAILABLE, FS), T.DEGRADED, id="failing"),
        pytest.param("recoverAfter", [FS, FF], (S.DEGRADED, FF), T.AVAILABLE, id="recovering"),
    ],
)
@PROPERTY
@given(data=st.data())
def test_alternating_signal_shorter_than_the_window_never_crosses_it(
    data: st.DataObject,
    window_setting: str,
    signal: list[Reason],
    kept: tuple[State, Reason],
    never: ConditionType,
) -> None:
    """Alternate the two forwarding reasons, each phase shorter than the window (timers checked
    at random moments): a collector that is Available never reaches Degraded, and with
    `recoverAfter` a collector Degraded by ForwardFailure never reaches Available."""
    window = data.draw(st.integers(2, 20 * 60), label="window (s)")
    run = Run.begin(
        collectors=[MC],
        settings={"degradeAfter": "0s", window_setting: f"{window}s", "staleAfter": "24h"},
    )
    run.report(kept[1], MC, "where it starts")
    phases = data.draw(st.lists(st.integers(1, window - 1), min_size=1, max_size=16))
    now = T0 + timedelta(seconds=1)
    for index, length in enumerate(phases):
        run.at(now).report(signal[index % 2], MC, f"phase {index}")
        _kept(run, kept, never)
        probe = data.draw(st.integers(0, length - 1), label="timer probe (s)")
        run.advance(now + timedelta(seconds=probe))
        _kept(run, kept, never)
        now += timedelta(seconds=length)
    run.at(now).report(signal[1], MC, "settled")
    run.advance(now + timedelta(hours=2))
    _kept(run, kept, never)


def _kept(run: Run, kept: tuple[State, Reason], never: ConditionType) -> None:
    c = run.collector()
    assert (c.state, c.reason) == kept, c
    assert run.condition(never).status == "False"


# ---------------------------------------------------------------- refusals


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=STEPS, last=STEP)
def test_refused_report_changes_no_collector(
    order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]], last: tuple[Any, ...]
) -> None:
    """From any reachable state, a report that is refused leaves every collector's state and
    reason as they were; unless it woke a stale collector (a sign of life), it changes nothing
    at all and writes nothing."""
    run = _reached(order, config, steps)
    run.advance(run.now + timedelta(milliseconds=last[0]))
    before = run.state
    verdict = _say(run, (0, *last[1:]))
    if verdict is not V.REFUSED:
        return
    for old, new in zip(before.collectors, run.state.collectors, strict=True):
        assert (new.state, new.reason) == (old.state, old.reason)
        assert replace(new, stale=old.stale, changed_at=old.changed_at) == old
    if not any(c.stale for c in before.collectors):
        assert run.state == before
        assert run.last.conditions is None


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=STEPS)
def test_no_report_raises_the_generation(
    order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    """Whatever generations the reports claim, the core works at the CR's and every condition
    carries it: only the CR raises it (FutureGeneration)."""
    run = _reached(order, config, steps)
    assert run.state.generation == CR_GENERATION
    assert {c.observed_generation for c in run.state.conditions} == {CR_GENERATION}
    assert all((c.observed_generation or 0) <= CR_GENERATION for c in run.state.collectors)


# ---------------------------------------------------------------- serialisation


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=STEPS)
def test_state_survives_serialisation(
    order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    """to_status -> JSON -> from_status gives an equal state (open windows, staleness and
    generations included); `start` from it at the same moment resumes the same collectors and
    (when none is stale: a stale condition's message names when the clock started) the same
    conditions."""
    run = _reached(order, config, steps)
    run.advance()
    stored = json.loads(json.dumps(to_status(run.state)))
    assert from_status(stored, run.config, run.now, run.state.generation) == run.state
    resumed = start(run.config, run.now, status=stored, generation=run.state.generation)
    assert (resumed.collectors, resumed.generation) == (run.state.collectors, run.state.generation)
    if not any(c.stale for c in run.state.collectors):
        assert resumed.conditions == run.state.conditions


# ---------------------------------------------------------------- written conditions


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=STEPS)
def test_written_conditions_keep_the_rules(
    order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    """Whatever happened: one condition of each type, exactly one standard type True, every
    reason a row of the vocabulary and of the Kubernetes pattern, whole-second UTC times, one
    observedGeneration, messages within the limit."""
    run = _reached(order, config, steps)
    table = {row.reason.value for row in SEED.reasons} | {r.value for r in ReadyReason}
    written = to_status(run.state)["conditions"]
    types = [c["type"] for c in written]
    expected = [*STANDARD, READY, *(c.condition_type for c in run.config.collectors)]
    assert types == expected
    standard_true(run.state.conditions)
    for raw in written:
        assert raw["reason"] in table and REASON.match(raw["reason"]), raw
        assert WHOLE_SECONDS_UTC.match(raw["lastTransitionTime"]), raw
        assert len(raw["message"]) <= 32768
        assert raw["observedGeneration"] == run.state.generation
        assert raw["status"] in {"True", "False", "Unknown"}
        moment = datetime.fromisoformat(raw["lastTransitionTime"].replace("Z", "+00:00"))
        assert T0 <= moment <= run.now


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=STEPS)
def test_the_conditions_are_always_those_of_the_state(
    order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    """After every step the conditions are what `write_conditions` computes for the state:
    `apply` skips it when no collector changed in what the conditions read (`shown`; an open
    window and the staleness clock are not), and this holds that list to what is read."""
    run = Run.begin(collectors=order, settings=config, generation=CR_GENERATION)
    for step in steps:
        _say(run, step)
        assert write_conditions(run.state, run.config, run.now) is run.state, step
