"""docs/spec.md §10: `Ready` is True only when `Available` is True and every counted
collector is at the CR's current generation; else False with `NotAvailable` or
`OutdatedGeneration` naming the collectors that lag and their generation; a collector whose
reports never carried a generation counts as current; `status.lastKnownGood` is the newest
generation the addon was Ready at and since when, and it never goes back."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from statemachines.vocabulary import READY, ReadyReason
from tests.core.conftest import MC, MIN, T0, UWL, Run
from tests.core.test_properties import CR_GENERATION, ORDERS, PROPERTY, SETTINGS, STEP, _say
from tests.names import R


def _available_at(generation: int, *, collectors: list[str] | None = None) -> Run:
    run = Run.begin(collectors=collectors, generation=generation)
    for name in collectors or [MC, UWL]:
        run.report(R.FORWARD_SUCCESSFUL, name, generation=generation)
    return run


def test_ready_is_true_when_available_and_every_counted_collector_is_at_the_generation() -> None:
    run = _available_at(3)
    ready = run.condition(READY)
    assert (ready.status, ready.reason, ready.observed_generation) == (
        "True",
        ReadyReason.CURRENT,
        3,
    )


def test_ready_is_false_not_available_when_the_addon_is_not_available() -> None:
    run = Run.begin(collectors=[MC])
    run.report(R.UPDATE_FAILURE, message="image pull failed")
    ready = run.condition(READY)
    assert (ready.status, ready.reason) == ("False", ReadyReason.NOT_AVAILABLE)
    assert "Degraded" in ready.message and "UpdateFailure" in ready.message


def test_ready_is_false_outdated_generation_naming_the_collectors_that_lag() -> None:
    run = _available_at(1)
    run.at(MIN).observe(2)
    run.report(R.FORWARD_SUCCESSFUL, MC, generation=2)
    ready = run.condition(READY)
    assert (ready.status, ready.reason) == ("False", ReadyReason.OUTDATED_GENERATION)
    assert ready.message.endswith("generation 2: UwlMetricsCollector at generation 1")
    assert run.addon() == "Available"


def test_a_collector_whose_reports_never_carried_a_generation_counts_as_current() -> None:
    run = Run.begin(collectors=[MC], generation=5)
    run.report(R.FORWARD_SUCCESSFUL)
    assert run.condition(READY).status == "True"


def test_a_disabled_collector_does_not_count_for_ready() -> None:
    run = _available_at(1)
    run.at(MIN).observe(2)
    run.report(R.FORWARD_SUCCESSFUL, MC, generation=2)
    run.report(R.DISABLED_METRICS, UWL)
    assert run.condition(READY).status == "True"


def test_the_last_known_good_generation_is_the_newest_ready_one_and_since_when() -> None:
    run = _available_at(1)
    assert run.state.last_known_good is not None
    assert (run.state.last_known_good.generation, run.state.last_known_good.since) == (1, T0)
    run.at(MIN).observe(2)
    run.at(2 * MIN).report(R.FORWARD_SUCCESSFUL, MC, generation=2)
    assert run.state.last_known_good.generation == 1  # not Ready at 2 yet
    run.at(3 * MIN).report(R.FORWARD_SUCCESSFUL, UWL, generation=2)
    assert (run.state.last_known_good.generation, run.state.last_known_good.since) == (
        2,
        T0 + 3 * MIN,
    )


def test_the_last_known_good_generation_survives_a_restart() -> None:
    run = _available_at(1)
    before = run.state.last_known_good
    assert run.restart(MIN).state.last_known_good == before


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=st.lists(st.tuples(STEP, st.booleans()), max_size=14))
def test_the_last_known_good_generation_never_goes_back(
    order: list[str], config: dict[str, Any], steps: list[tuple[tuple[Any, ...], bool]]
) -> None:
    """Reports, timers and spec changes in any order: the generation only grows, and its
    `since` stays while the generation does."""
    run = Run.begin(collectors=order, settings=config, generation=CR_GENERATION)
    for step, spec_changed in steps:
        if spec_changed:
            run.observe(run.state.generation + 1)
        _say(run, step)
    goods = [o.state.last_known_good for o in run.outcomes if o.state.last_known_good]
    for before, after in itertools.pairwise(goods):
        assert before.generation <= after.generation
        assert before.generation < after.generation or before.since == after.since
