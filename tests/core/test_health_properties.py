"""Invariants of health rules, property-based (hypothesis):

- an object flapping faster than `for` never counts: the resource stays counted `Healthy`
  whatever the results in between and however the timers fire (docs/spec.md §8, `for`);
- the result does not depend on the order of the resources: the overlay, `ResourcesHealthy`
  and the addon's message are the same for every permutation of the configuration;
- a health rule never changes a collector's machine state: the overlay reads the collectors'
  contributions and returns new ones, each the one underneath or raised to the resources'
  floor, and leaves the collectors (state, reason, staleness) as they were.
"""

from __future__ import annotations

import copy
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from statemachines.aggregate import collector_reason
from statemachines.health.counted import CountedHealth, advance, count, next_wakeup
from statemachines.health.overlay import addon_message, overlay
from statemachines.health.resources import Resource
from statemachines.health.rules import Result
from statemachines.health.status import resources_healthy
from statemachines.health.vocabulary import Health
from statemachines.state import CollectorState
from statemachines.vocabulary import SEED, Reason, State
from tests.core.health import COLLECTORS, MC, T0, UWL, resource
from tests.properties import examples

PROPERTY = settings(max_examples=examples(150), deadline=None, database=None)
NOT_HEALTHY = st.sampled_from(
    [
        Result(Health.UNHEALTHY, "AvailableCondition", "no replica"),
        Result(Health.UNKNOWN, "NotFound", "gone"),
        Result(Health.UNHEALTHY, "EvaluationError", "Key not found"),
    ]
)
HEALTHY = Result(Health.HEALTHY, "AvailableCondition", "ready")


@PROPERTY
@given(
    for_seconds=st.integers(min_value=1, max_value=600),
    # each flap: how long it stays not Healthy (a fraction of `for`), the results meanwhile,
    # then how long it is Healthy again
    flaps=st.lists(
        st.tuples(
            st.floats(min_value=0.0, max_value=0.999),
            st.lists(NOT_HEALTHY, min_size=1, max_size=4),
            st.integers(min_value=0, max_value=900),
        ),
        max_size=12,
    ),
    timer_checks=st.integers(min_value=0, max_value=5),
)
def test_flapping_faster_than_for_never_counts(
    for_seconds: int,
    flaps: list[tuple[float, list[Result], int]],
    timer_checks: int,
) -> None:
    for_ = timedelta(seconds=for_seconds)
    watched = resource({"singleConditionType": "Available"}, for_=f"{for_seconds}s")
    now = T0
    state = count(None, HEALTHY, now, for_=for_)
    for fraction, results, healthy_for in flaps:
        outage = for_ * fraction
        steps = len(results)
        for index, result in enumerate(results):
            state = count(state, result, now + outage * index / steps, for_=for_)
        # the shell's timer may run at any time before the object recovers
        for check in range(timer_checks):
            at = now + outage * check / max(timer_checks, 1)
            wakeup = next_wakeup([watched], {watched.name: state})
            if wakeup is not None and wakeup <= at:
                state = advance([watched], {watched.name: state}, at)[watched.name]
            assert state.health is Health.HEALTHY
        now += outage
        state = count(state, HEALTHY, now, for_=for_)
        assert state.health is Health.HEALTHY and state.pending is None
        now += timedelta(seconds=healthy_for)
    assert state.since == T0


RESOURCE_POOL = [
    resource({"alwaysHealthy": {}}, name=f"r{index}", collector=collector)
    for index, collector in enumerate([MC, UWL, None, MC, None, UWL])
]
HEALTHS = st.sampled_from(list(Health))
CONTRIBUTIONS = st.fixed_dictionaries(
    {},
    optional={
        name: st.sampled_from([r for r in SEED.reasons if r.precedence]).map(lambda r: r.reason)
        for name in COLLECTORS
    },
)


@PROPERTY
@given(
    picked=st.lists(st.sampled_from(RESOURCE_POOL), unique=True, max_size=len(RESOURCE_POOL)),
    healths=st.lists(HEALTHS, min_size=len(RESOURCE_POOL), max_size=len(RESOURCE_POOL)),
    contributions=CONTRIBUTIONS,
    data=st.data(),
)
def test_result_does_not_depend_on_the_order_of_the_resources(
    picked: list[Resource],
    healths: list[Health],
    contributions: dict[str, Reason],
    data: st.DataObject,
) -> None:
    counted = {
        r.name: CountedHealth(h, "Reason", f"{r.name} says", T0)
        for r, h in zip(RESOURCE_POOL, healths, strict=True)
    }
    shuffled = data.draw(st.permutations(picked))

    def outcome(resources: list[Resource]) -> tuple[object, ...]:
        return (
            overlay(contributions, resources, counted, profile=SEED),
            resources_healthy(resources, counted, previous=None, now=T0, generation=1),
            addon_message("MetricsCollector: ForwardSuccessful", resources, counted),
        )

    assert outcome(picked) == outcome(list(shuffled))


COLLECTOR_STATES = st.builds(
    CollectorState,
    name=st.sampled_from(COLLECTORS),
    state=st.sampled_from([State.PROGRESSING, State.AVAILABLE, State.DEGRADED]),
    reason=st.sampled_from(
        [
            None,
            Reason.UPDATE_SUCCESSFUL,
            Reason.FORWARD_SUCCESSFUL,
            Reason.FORWARD_FAILURE,
            Reason.UPDATE_FAILURE,
        ]
    ),
    message=st.text(max_size=10),
    changed_at=st.just(T0),
    stale=st.booleans(),
)


@PROPERTY
@given(
    collectors=st.lists(COLLECTOR_STATES, min_size=1, max_size=2, unique_by=lambda c: c.name),
    picked=st.lists(st.sampled_from(RESOURCE_POOL), unique=True, max_size=len(RESOURCE_POOL)),
    healths=st.lists(HEALTHS, min_size=len(RESOURCE_POOL), max_size=len(RESOURCE_POOL)),
)
def test_health_rule_never_changes_a_collectors_machine_state(
    collectors: list[CollectorState], picked: list[Resource], healths: list[Health]
) -> None:
    counted = {
        r.name: CountedHealth(h, "Reason", "m", T0)
        for r, h in zip(RESOURCE_POOL, healths, strict=True)
    }
    before = copy.deepcopy(collectors)
    underneath = {c.name: collector_reason(c) for c in collectors}
    contributed = overlay(dict(underneath), picked, counted, profile=SEED)

    def rank(reason: Reason) -> int:
        return SEED.spec(reason).precedence or 0

    assert collectors == before  # state, reason, message, staleness: as they were
    assert contributed.keys() == underneath.keys()
    for name, reason in contributed.items():
        assert reason in (underneath[name], Reason.RESOURCE_UNHEALTHY, Reason.UPDATE_SUCCESSFUL)
        assert rank(reason) >= rank(underneath[name])  # a health rule only ever holds it back
    if all(counted[r.name].health is Health.HEALTHY for r in picked):
        assert contributed == underneath
