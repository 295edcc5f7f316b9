"""Health rules through the core's entry points (docs/spec.md §8, "How it counts" and "What is
written"): `observe_object` beside `apply`, `advance` and `start`; the overlay in the
aggregation, the `ResourcesHealthy` condition, `status.resources[]` on the CR and back, and the
`for` timer in `next_wakeup`. One test per rule, then the property that a health rule never
changes a collector's machine."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from statemachines import (
    Config,
    Reason,
    State,
    advance,
    apply,
    next_wakeup,
    observe_object,
    start,
    to_status,
)
from statemachines.conditions import find_condition
from statemachines.health import RESOURCES_HEALTHY
from statemachines.reports import Report
from statemachines.state import AddonState
from tests.core.health import MC, MIN, T0, UWL, resource
from tests.properties import examples
from tests.support import condition

DEPLOYMENT_RULE = {"singleConditionType": "Available"}


def _config(*resources: Any, collectors: tuple[str, ...] = (MC, UWL)) -> Config:
    return Config.create(collectors=collectors, resources=resources)


def _deployment(available: str) -> dict[str, Any]:
    return {
        "metadata": {"generation": 1},
        "status": {"conditions": [condition("Available", available)]},
    }


def _forwarding(config: Config) -> AddonState:
    """Every collector Available (ForwardSuccessful) at T0."""
    state = start(config, T0)
    for name in (c.name for c in config.collectors):
        state = apply(state, Report(Reason.FORWARD_SUCCESSFUL, name), T0, config=config).state
    return state


def _true(state: AddonState) -> tuple[str, str]:
    c = next(c for c in state.conditions if c.status == "True" and c.type != RESOURCES_HEALTHY)
    return c.type, c.reason


def test_unhealthy_resource_makes_its_collector_contribute_resource_unhealthy() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = observe_object(_forwarding(config), "mc", _deployment("True"), T0, config=config).state
    assert _true(state) == ("Available", "ForwardSuccessful")
    out = observe_object(state, "mc", _deployment("False"), T0 + MIN, config=config)
    assert out.changed
    assert _true(out.state) == ("Degraded", "ResourceUnhealthy")
    # The collector's own state, reason and condition are those of its reports.
    assert out.state.collector(MC).state is State.AVAILABLE
    own = find_condition(out.state.conditions, "MetricsCollectorStatus")
    assert own is not None and own.reason == "ForwardSuccessful"


def test_forward_failure_outranks_resource_unhealthy() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = _forwarding(config)
    state = apply(state, Report(Reason.FORWARD_FAILURE, UWL), T0, config=config).state
    state = advance(state, T0 + 11 * MIN, config=config).state  # uwl's window ends
    state = observe_object(state, "mc", _deployment("False"), T0 + 11 * MIN, config=config).state
    assert _true(state) == ("Degraded", "ForwardFailure")


def test_unknown_resource_caps_its_collector_at_update_successful() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = _forwarding(config)  # the object was never read: Unknown/NotFound
    assert _true(state) == ("Progressing", "UpdateSuccessful")
    state = observe_object(state, "mc", _deployment("True"), T0, config=config).state
    assert _true(state) == ("Available", "ForwardSuccessful")


def test_resource_without_collector_speaks_for_every_counted_collector() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="shared"))
    state = observe_object(_forwarding(config), "shared", _deployment("False"), T0, config=config)
    assert _true(state.state) == ("Degraded", "ResourceUnhealthy")


def test_resource_of_a_disabled_collector_does_not_count() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="uwl", collector=UWL))
    state = _forwarding(config)
    state = apply(state, Report(Reason.DISABLED_METRICS, UWL), T0, config=config).state
    state = observe_object(state, "uwl", _deployment("False"), T0, config=config).state
    assert _true(state) == ("Available", "ForwardSuccessful")


def test_resources_healthy_condition_only_when_resources_are_configured() -> None:
    plain = start(_config(), T0)
    assert find_condition(plain.conditions, RESOURCES_HEALTHY) is None
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = start(config, T0)
    written = find_condition(state.conditions, RESOURCES_HEALTHY)
    assert written is not None and (written.status, written.reason) == (
        "Unknown",
        "HealthyConditionRule",
    )
    state = observe_object(state, "mc", _deployment("True"), T0, config=config).state
    healthy = find_condition(state.conditions, RESOURCES_HEALTHY)
    assert healthy is not None and healthy.status == "True"
    state = observe_object(state, "mc", _deployment("False"), T0, config=config).state
    unhealthy = find_condition(state.conditions, RESOURCES_HEALTHY)
    assert unhealthy is not None and unhealthy.status == "False"


def test_addon_message_names_resources_not_healthy_after_the_collectors() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = observe_object(_forwarding(config), "mc", None, T0, config=config).state
    degraded = find_condition(state.conditions, "Progressing")
    assert degraded is not None
    collectors, _, resources = degraded.message.partition("; mc: ")
    assert collectors.startswith("MetricsCollector: ForwardSuccessful")
    assert resources.startswith("Unknown, NotFound")


def test_a_gone_object_is_named_by_ready_as_what_holds_the_addon_back() -> None:
    """The reason stays the rules' (UpdateSuccessful, §8); Ready=False says why: the gone
    object, by name, NotFound."""
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = observe_object(_forwarding(config), "mc", _deployment("True"), T0, config=config).state
    ready = find_condition(state.conditions, "Ready")
    assert ready is not None and ready.status == "True"
    state = observe_object(state, "mc", None, T0 + MIN, config=config).state
    ready = find_condition(state.conditions, "Ready")
    assert ready is not None and ready.status == "False"
    said, _, held = ready.message.partition("; not healthy: ")
    assert said == "the addon is Progressing, not Available (UpdateSuccessful)"
    assert held.startswith("mc: Unknown, NotFound (") and "not found" in held


def test_for_holds_a_result_back_and_its_timer_counts_it_without_another_change() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC, for_="2m"))
    state = observe_object(_forwarding(config), "mc", _deployment("True"), T0, config=config).state
    held = observe_object(state, "mc", _deployment("False"), T0 + MIN, config=config)
    assert held.changed  # the pending result is persisted
    assert _true(held.state) == ("Available", "ForwardSuccessful")
    assert held.next_wakeup == T0 + 3 * MIN
    assert next_wakeup(held.state, config) == T0 + 3 * MIN
    fired = advance(held.state, T0 + 3 * MIN, config=config)
    assert _true(fired.state) == ("Degraded", "ResourceUnhealthy")
    entry = to_status(fired.state)["resources"][0]
    assert entry["conditions"][0]["lastTransitionTime"] == "2025-01-01T12:03:00Z"


def test_status_resources_survive_a_restart_with_the_pending_result() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC, for_="2m"))
    state = observe_object(_forwarding(config), "mc", _deployment("True"), T0, config=config).state
    state = observe_object(state, "mc", _deployment("False"), T0 + MIN, config=config).state
    status = to_status(state)
    assert status["resources"][0]["pending"]["reason"] == "AvailableCondition"
    again = start(config, T0 + 2 * MIN, status=status)
    assert again.health == state.health
    assert next_wakeup(again, config) == T0 + 3 * MIN


def test_an_unchanged_object_writes_nothing() -> None:
    config = _config(resource(DEPLOYMENT_RULE, name="mc", collector=MC))
    state = observe_object(_forwarding(config), "mc", _deployment("True"), T0, config=config).state
    again = observe_object(state, "mc", _deployment("True"), T0 + MIN, config=config)
    assert not again.changed


def test_no_status_resources_without_configured_resources() -> None:
    assert "resources" not in to_status(start(_config(), T0))


# --- property: a health rule never changes a collector's machine state ------------------------

_REASONS = [
    Reason.UPDATE_SUCCESSFUL,
    Reason.UPDATE_FAILURE,
    Reason.FORWARD_SUCCESSFUL,
    Reason.FORWARD_FAILURE,
    Reason.DISABLED_METRICS,
]
_OBJECTS = [None, _deployment("True"), _deployment("False"), _deployment("Unknown"), {}]
_event = st.one_of(
    st.tuples(st.just("report"), st.sampled_from([MC, UWL]), st.sampled_from(_REASONS)),
    st.tuples(st.just("object"), st.sampled_from(["mc", "all"]), st.sampled_from(range(5))),
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 300), _event), max_size=25))
def test_a_health_rule_never_changes_a_collectors_machine(events: list[Any]) -> None:
    watched = _config(
        resource(DEPLOYMENT_RULE, name="mc", collector=MC, for_="1m"),
        resource(DEPLOYMENT_RULE, name="all", for_="0s"),
    )
    plain = _config()
    with_rules, without = start(watched, T0), start(plain, T0)
    now = T0
    for seconds, event in events:
        now += timedelta(seconds=seconds)
        if event[0] == "report":
            report = Report(event[2], event[1])
            with_rules = apply(with_rules, report, now, config=watched).state
            without = apply(without, report, now, config=plain).state
        else:
            obj = _OBJECTS[event[2]]
            with_rules = observe_object(with_rules, event[1], obj, now, config=watched).state
            without = advance(without, now, config=plain).state
        assert with_rules.collectors == without.collectors
