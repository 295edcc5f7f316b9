"""docs/spec.md §8, what counts and what is written: the counted health with `for` (a
pending result, persisted, counted by a timer at `since + for` with no further change;
recovery immediate), `status.resources[]`, the `ResourcesHealthy` condition, and the overlay in
the aggregation (`ResourceUnhealthy` in the precedence, an `Unknown` resource caps its
collector at `UpdateSuccessful`, the collector's own reason untouched).
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from statemachines.conditions import Condition
from statemachines.health.counted import (
    CountedHealth,
    Pending,
    advance,
    count,
    next_wakeup,
    start,
)
from statemachines.health.overlay import addon_message, collector_health, overlay
from statemachines.health.resources import Resource
from statemachines.health.rules import Result, evaluate
from statemachines.health.status import resources_from_api, resources_healthy, resources_to_api
from statemachines.health.vocabulary import Health
from statemachines.readback import Reader
from statemachines.vocabulary import SEED, Reason
from tests.core.health import MC, MIN, T0, UWL, resource
from tests.names import R
from tests.support import condition

OK, BAD, UNKNOWN = Health.HEALTHY, Health.UNHEALTHY, Health.UNKNOWN
SEC = timedelta(seconds=1)
FOR = 2 * MIN
AVAILABLE = {"singleConditionType": "Available"}
HEALTHY = Result(OK, "AvailableCondition", "ready")
DOWN = Result(BAD, "AvailableCondition", "no replica")
LOST = Result(UNKNOWN, "NotFound", "Deployment observability/watched not found")


def counted_healthy(message: str = "ready") -> CountedHealth:
    return CountedHealth(OK, "AvailableCondition", message, T0)


def deployment(available: str, message: str = "") -> dict[str, object]:
    return {"status": {"conditions": [condition("Available", available, message=message)]}}


# --- for: the counted health ----------------------------------------------------------------


def test_first_result_counts_at_once() -> None:
    assert count(None, DOWN, T0, for_=FOR) == CountedHealth(BAD, DOWN.reason, DOWN.message, T0)


def test_result_after_counted_healthy_is_pending_for_for() -> None:
    pending = count(counted_healthy(), DOWN, T0 + MIN, for_=FOR)
    assert pending.health is OK and pending.since == T0
    assert pending.pending == Pending(BAD, DOWN.reason, DOWN.message, T0 + MIN)


def test_pending_counts_at_since_plus_for_with_no_further_change() -> None:
    """The timer: nothing happens to the object, time passing makes it count, and its
    transition time is the deadline, not the moment the timer ran."""
    pending = count(counted_healthy(), DOWN, T0 + MIN, for_=FOR)
    watched = resource(AVAILABLE, for_="2m")
    assert next_wakeup([watched], {"watched": pending}) == T0 + 3 * MIN
    early = advance([watched], {"watched": pending}, T0 + 3 * MIN - SEC)
    assert early["watched"] == pending
    late = advance([watched], {"watched": pending}, T0 + 5 * MIN)["watched"]
    assert late == CountedHealth(BAD, DOWN.reason, DOWN.message, T0 + 3 * MIN)
    assert next_wakeup([watched], {"watched": late}) is None


def test_pending_may_switch_between_unhealthy_and_unknown() -> None:
    state = count(counted_healthy(), DOWN, T0 + MIN, for_=FOR)
    state = count(state, LOST, T0 + 2 * MIN, for_=FOR)
    assert state.pending == Pending(UNKNOWN, LOST.reason, LOST.message, T0 + MIN)
    assert count(state, DOWN, T0 + 3 * MIN, for_=FOR).health is BAD  # held for 2m: counts


def test_healthy_result_in_between_cancels_the_pending_one() -> None:
    state = count(counted_healthy(), DOWN, T0 + MIN, for_=FOR)
    state = count(state, HEALTHY, T0 + 2 * MIN, for_=FOR)
    assert state == counted_healthy()
    state = count(state, DOWN, T0 + 2 * MIN + SEC, for_=FOR)
    assert state.pending is not None and state.pending.since == T0 + 2 * MIN + SEC


def test_recovery_to_healthy_is_immediate() -> None:
    down = CountedHealth(BAD, DOWN.reason, DOWN.message, T0)
    assert count(down, HEALTHY, T0 + SEC, for_=FOR) == CountedHealth(
        OK, HEALTHY.reason, HEALTHY.message, T0 + SEC
    )


def test_for_zero_counts_at_once() -> None:
    assert count(counted_healthy(), DOWN, T0 + MIN, for_=timedelta(0)).health is BAD


def test_for_applies_only_after_a_counted_healthy() -> None:
    down = CountedHealth(BAD, DOWN.reason, DOWN.message, T0)
    lost = count(down, LOST, T0 + MIN, for_=FOR)
    assert lost == CountedHealth(UNKNOWN, LOST.reason, LOST.message, T0 + MIN)


def test_evaluation_racing_the_timer_counts_the_pending_result_first() -> None:
    """The result held until its deadline counts at the deadline; the later one is then judged
    against it (counted Unhealthy: an Unknown counts at once)."""
    state = count(counted_healthy(), DOWN, T0, for_=FOR)
    raced = count(state, LOST, T0 + 3 * MIN, for_=FOR)
    assert raced == CountedHealth(UNKNOWN, LOST.reason, LOST.message, T0 + 3 * MIN)
    refreshed = count(state, DOWN, T0 + 3 * MIN, for_=FOR)
    assert refreshed == CountedHealth(BAD, DOWN.reason, DOWN.message, T0 + 2 * MIN)


def test_transition_time_moves_only_when_the_health_changes() -> None:
    newer = count(
        counted_healthy(), Result(OK, "AvailableCondition", "3 replicas"), T0 + MIN, for_=FOR
    )
    assert newer == counted_healthy("3 replicas")  # message replaced, since kept


def observe(
    watched: Resource, previous: CountedHealth | None, obj: dict[str, Any] | None, now: datetime
) -> CountedHealth:
    """An object's change as the shell hands it over: evaluated, then counted."""
    return count(previous, evaluate(watched, obj), now, for_=watched.for_)


def test_deleted_object_is_not_found_after_for() -> None:
    watched = resource(AVAILABLE, for_="2m")
    state = observe(watched, None, deployment("True", "ready"), T0)
    state = observe(watched, state, None, T0 + MIN)  # deleted
    assert state.health is OK and state.pending is not None
    assert state.pending.reason == "NotFound"
    gone = advance([watched], {"watched": state}, T0 + 3 * MIN)["watched"]
    assert (gone.health, gone.reason, gone.since) == (UNKNOWN, "NotFound", T0 + 3 * MIN)


def test_start_keeps_stored_entries_and_others_are_not_found() -> None:
    kept, fresh = resource(AVAILABLE, name="kept"), resource(AVAILABLE, name="fresh")
    stored = {"kept": counted_healthy(), "gone": counted_healthy()}
    started = start([kept, fresh], stored, T0 + MIN)
    assert started == {
        "kept": counted_healthy(),
        "fresh": CountedHealth(
            UNKNOWN, "NotFound", "Deployment observability/fresh not found", T0 + MIN
        ),
    }


# --- status.resources[] ---------------------------------------------------------------------


def test_resources_are_written_in_configuration_order_with_pending() -> None:
    b, a = resource(AVAILABLE, name="b", for_="2m"), resource(AVAILABLE, name="a")
    pending = count(counted_healthy(), DOWN, T0 + MIN + timedelta(microseconds=250), for_=FOR)
    written = resources_to_api(
        [b, a], {"a": CountedHealth(BAD, "AvailableCondition", "x", T0), "b": pending}
    )
    assert [e["name"] for e in written] == ["b", "a"]
    assert written[0] == {
        "name": "b",
        "object": {
            "apiVersion": "v1",
            "kind": "Deployment",
            "namespace": "observability",
            "name": "b",
        },
        "conditions": [
            {
                "type": "Healthy",
                "status": "True",
                "reason": "AvailableCondition",
                "message": "ready",
                "lastTransitionTime": "2025-01-01T12:00:00Z",
            }
        ],
        "pending": {
            "status": "False",
            "reason": "AvailableCondition",
            "message": "no replica",
            "since": "2025-01-01T12:01:00.000250Z",
        },
    }
    assert written[1]["conditions"][0]["status"] == "False" and "pending" not in written[1]


def test_resources_survive_the_status_exactly() -> None:
    """The pending result's start keeps its microseconds, so a restart ends `for` on time."""
    watched = [resource(AVAILABLE, name="a", for_="2m"), resource(AVAILABLE, name="b")]
    counted = {
        "a": count(counted_healthy(), LOST, T0 + MIN + timedelta(microseconds=7), for_=FOR),
        "b": CountedHealth(BAD, "AvailableCondition", "no replica", T0),
    }
    stored = json.loads(json.dumps(resources_to_api(watched, counted)))
    read = Reader(longest=FOR)
    assert resources_from_api(stored, watched, read) == counted
    assert resources_from_api(stored, watched[1:], read) == {"b": counted["b"]}  # unconfigured
    assert resources_from_api(None, watched, read) == {}
    assert read.ignored == []


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"a": 1}, "status.resources", id="not-a-list"),
        pytest.param([{"conditions": []}], "status.resources[0]", id="no-name"),
        pytest.param(
            [{"name": "a", "conditions": [{"type": "Healthy", "status": "Maybe"}]}],
            "status.resources[0].conditions[0].status",
            id="bad-status",
        ),
        pytest.param(
            [
                {
                    "name": "a",
                    "conditions": [
                        {
                            "type": "Healthy",
                            "status": "True",
                            "lastTransitionTime": "2025-01-01T12:00:00Z",
                        }
                    ],
                    "pending": {"status": "False"},
                }
            ],
            "status.resources[0].pending",
            id="bad-pending",
        ),
        pytest.param(
            [
                {
                    "name": "a",
                    "conditions": [
                        {
                            "type": "Healthy",
                            "status": "False",
                            "lastTransitionTime": "2025-01-01T12:00:00Z",
                        }
                    ],
                    "pending": {
                        "status": "Unknown",
                        "reason": "NotFound",
                        "since": "2025-01-01T12:00:00Z",
                    },
                }
            ],
            "status.resources[0].pending",
            id="pending-while-not-healthy",
        ),
    ],
)
def test_unreadable_stored_resources_are_absent_and_named(raw: object, field: str) -> None:
    """docs/spec.md §6, what is read back is checked: the entry (or its pending result) is taken
    as absent, and named."""
    read = Reader(longest=timedelta(hours=1))
    counted = resources_from_api(raw, [resource(AVAILABLE, name="a")], read)
    assert field in [problem.field for problem in read.ignored]
    assert "pending" in field or "a" not in counted


# --- ResourcesHealthy -----------------------------------------------------------------------

A, B, C = (resource(AVAILABLE, name=n) for n in ("a", "b", "c"))


@pytest.mark.parametrize(
    ("healths", "status", "message"),
    [
        pytest.param((OK, OK, OK), "True", "every resource is Healthy", id="all-healthy-is-true"),
        pytest.param(
            (OK, BAD, UNKNOWN),
            "False",
            "b: Unhealthy, R (m); c: Unknown, R (m)",
            id="one-unhealthy-is-false",
        ),
        pytest.param((UNKNOWN, OK, OK), "Unknown", "a: Unknown, R (m)", id="otherwise-unknown"),
    ],
)
def test_resources_healthy_condition(
    healths: tuple[Health, ...], status: str, message: str
) -> None:
    counted = {
        r.name: CountedHealth(h, "R", "m", T0) for r, h in zip((A, B, C), healths, strict=True)
    }
    got = resources_healthy([C, A, B], counted, previous=None, now=T0 + MIN, generation=4)
    assert got == Condition(
        "ResourcesHealthy", status, "HealthyConditionRule", message, T0 + MIN, 4
    )


def test_resources_healthy_counts_the_counted_health_and_keeps_its_time() -> None:
    pending = count(counted_healthy(), DOWN, T0, for_=FOR)
    previous = Condition("ResourcesHealthy", "True", "HealthyConditionRule", "", T0, 1)
    got = resources_healthy([A], {"a": pending}, previous=previous, now=T0 + MIN, generation=1)
    assert got is not None and (got.status, got.last_transition_time) == ("True", T0)


def test_no_resources_configured_no_resources_healthy() -> None:
    assert resources_healthy([], {}, previous=None, now=T0, generation=1) is None


# --- the overlay ----------------------------------------------------------------------------

MC_RES, UWL_RES, SHARED = (
    resource(AVAILABLE, name="mc", collector=MC),
    resource(AVAILABLE, name="uwl", collector=UWL),
    resource(AVAILABLE, name="shared"),
)


def health_of(**healths: Health) -> dict[str, CountedHealth]:
    return {name: CountedHealth(h, "R", "m", T0) for name, h in healths.items()}


@pytest.mark.parametrize(
    ("underneath", "health", "contributed"),
    [
        pytest.param(
            R.FORWARD_SUCCESSFUL,
            BAD,
            R.RESOURCE_UNHEALTHY,
            id="unhealthy-resource-makes-available-degraded",
        ),
        pytest.param(
            R.UPDATE_FAILURE,
            BAD,
            R.RESOURCE_UNHEALTHY,
            id="resource-unhealthy-outranks-update-failure",
        ),
        pytest.param(
            R.REPORTS_STALE,
            BAD,
            R.RESOURCE_UNHEALTHY,
            id="resource-unhealthy-outranks-reports-stale",
        ),
        pytest.param(
            R.FORWARD_FAILURE,
            BAD,
            R.FORWARD_FAILURE,
            id="forward-failure-outranks-resource-unhealthy",
        ),
        pytest.param(
            R.FORWARD_SUCCESSFUL,
            UNKNOWN,
            R.UPDATE_SUCCESSFUL,
            id="unknown-resource-caps-at-update-successful",
        ),
        pytest.param(
            R.UPDATE_FAILURE, UNKNOWN, R.UPDATE_FAILURE, id="unknown-resource-keeps-a-worse-reason"
        ),
        pytest.param(
            R.FORWARD_SUCCESSFUL, OK, R.FORWARD_SUCCESSFUL, id="healthy-resource-changes-nothing"
        ),
    ],
)
def test_overlay_in_the_aggregation(
    underneath: Reason, health: Health, contributed: Reason
) -> None:
    got = overlay(
        {MC: underneath, UWL: R.FORWARD_SUCCESSFUL}, [MC_RES], health_of(mc=health), profile=SEED
    )
    assert got == {MC: contributed, UWL: R.FORWARD_SUCCESSFUL}
    assert SEED.spec(R.RESOURCE_UNHEALTHY).leads_to.value == "Degraded"


def test_resource_without_collector_speaks_for_every_counted_collector() -> None:
    got = overlay(
        {MC: R.FORWARD_SUCCESSFUL, UWL: R.FORWARD_SUCCESSFUL},
        [SHARED],
        health_of(shared=BAD),
        profile=SEED,
    )
    assert got == {MC: R.RESOURCE_UNHEALTHY, UWL: R.RESOURCE_UNHEALTHY}


def test_collector_not_counted_gets_no_contribution() -> None:
    """A Disabled or NotSupported collector is not in the table: the overlay adds none."""
    got = overlay(
        {MC: R.FORWARD_SUCCESSFUL}, [UWL_RES, SHARED], health_of(uwl=BAD, shared=OK), profile=SEED
    )
    assert got == {MC: R.FORWARD_SUCCESSFUL}


def test_collector_health_is_the_worst_of_its_resources() -> None:
    resources = [MC_RES, UWL_RES, SHARED]
    counted = health_of(mc=UNKNOWN, uwl=BAD, shared=OK)
    assert collector_health(MC, resources, counted) is UNKNOWN
    assert collector_health(UWL, resources, counted) is BAD
    assert collector_health(MC, [SHARED], counted) is OK
    assert collector_health(MC, [MC_RES], {}) is UNKNOWN  # never observed
    assert collector_health(MC, [], {}) is OK


def test_addon_message_names_resources_not_healthy_after_the_collectors() -> None:
    collectors = "MetricsCollector: ForwardSuccessful (metrics sent)"
    counted = {
        "mc": CountedHealth(BAD, "AvailableCondition", "no replica", T0),
        "shared": counted_healthy(),
    }
    assert addon_message(collectors, [SHARED, MC_RES], counted) == (
        "MetricsCollector: ForwardSuccessful (metrics sent);"
        " mc: Unhealthy, AvailableCondition (no replica)"
    )
    assert addon_message(collectors, [SHARED], counted) == collectors
