"""Leader election on the in-memory seam, with a clock the test moves: a leader whose renewals
fail steps down once the renew deadline passes, says so once, and the gauge of seconds since
the last renewal shows the outage before that. An undisturbed leader renews without reading the
Lease; a 409 on such a renewal (someone else wrote) leads to a read and the usual rules."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import LEASE
from controller.kube.fake import FakeKube
from controller.ops.leader import LeaderElector, LeaderMetrics
from tests.clock import FakeClock


def elector(
    kube: FakeKube, clock: FakeClock, registry: CollectorRegistry, events: list[str]
) -> LeaderElector:
    return LeaderElector(
        kube,
        namespace="default",
        name="addon-status",
        identity="a",
        clock=clock,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        on_started_leading=lambda: events.append("started"),
        on_stopped_leading=lambda: events.append("stopped"),
        metrics=LeaderMetrics(registry),
    )


def test_a_leader_that_cannot_renew_steps_down_at_the_renew_deadline_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kube, clock, registry, events = FakeKube(), FakeClock(), CollectorRegistry(), []
    leader = elector(kube, clock, registry, events)
    age = "addon_status_lease_renew_age_seconds"
    assert registry.get_sample_value(age) == float("inf")  # never renewed
    leader.run_round()
    assert leader.is_leader and events == ["started"]
    assert kube.stored(LEASE, "default", "addon-status") is not None
    for op in ("get", "replace"):  # the API server stops answering
        kube.fail_next(op, 503, times=100)
    with caplog.at_level(logging.WARNING, logger="controller.ops.leader"):
        for _ in range(4):  # 8 s: still within the deadline
            clock.move(seconds=2.0)
            leader.run_round()
        assert leader.is_leader and registry.get_sample_value(age) == 8.0
        for _ in range(3):  # 10 s and more: past it
            clock.move(seconds=2.0)
            leader.run_round()
    assert not leader.is_leader and events == ["started", "stopped"]
    assert registry.get_sample_value(age) == 14.0
    deadline = [r for r in caplog.records if "renew deadline" in r.getMessage()]
    assert len(deadline) == 1 and "stepping down" in deadline[0].getMessage()


def test_a_renewal_resets_the_age_of_the_lease() -> None:
    kube, clock, registry = FakeKube(), FakeClock(), CollectorRegistry()
    leader = elector(kube, clock, registry, [])
    leader.run_round()
    clock.move(seconds=2.0)
    assert registry.get_sample_value("addon_status_lease_renew_age_seconds") == 2.0
    leader.run_round()
    assert registry.get_sample_value("addon_status_lease_renew_age_seconds") == 0.0


def test_an_undisturbed_leader_renews_without_reading_the_lease() -> None:
    kube, clock = FakeKube(), FakeClock()
    leader = elector(kube, clock, CollectorRegistry(), [])
    leader.run_round()  # acquires: reads (absent), creates
    assert [c.op for c in kube.calls] == ["get", "create"]
    for _ in range(30):  # one minute of renewals
        clock.move(seconds=2.0)
        leader.run_round()
    assert leader.is_leader
    assert [c.op for c in kube.calls[2:]] == ["replace"] * 30
    spec = (kube.stored(LEASE, "default", "addon-status") or {})["spec"]
    assert spec["holderIdentity"] == "a" and spec["leaseTransitions"] == 0
    assert spec["renewTime"] == "2025-01-01T12:01:00.000000Z"
    assert spec["acquireTime"] == "2025-01-01T12:00:00.000000Z"


def _now_held_by(holder: str, clock: FakeClock) -> Callable[[dict[str, Any]], None]:
    def mutate(lease: dict[str, Any]) -> None:
        lease["spec"]["holderIdentity"] = holder
        lease["spec"]["renewTime"] = clock.now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    return mutate


def test_a_conflict_on_renewal_reads_the_lease_and_steps_down_for_another_holder() -> None:
    kube, clock, events = FakeKube(), FakeClock(), []
    leader = elector(kube, clock, CollectorRegistry(), events)
    leader.run_round()
    clock.move(seconds=2.0)
    kube.edit(LEASE, "default", "addon-status", _now_held_by("b", clock))
    del kube.calls[:]
    leader.run_round()
    assert [c.op for c in kube.calls] == ["replace", "get"]  # the 409, then a fresh read
    assert not leader.is_leader and leader.holder == "b" and events == ["started", "stopped"]
    assert (kube.stored(LEASE, "default", "addon-status") or {})["spec"]["holderIdentity"] == "b"


def test_a_conflict_on_renewal_by_a_writer_that_left_us_holding_renews_from_a_fresh_read() -> None:
    kube, clock, events = FakeKube(), FakeClock(), []
    leader = elector(kube, clock, CollectorRegistry(), events)
    leader.run_round()
    kube.edit(
        LEASE,
        "default",
        "addon-status",
        lambda lease: lease["metadata"].setdefault("labels", {}).update(team="obs"),
    )
    clock.move(seconds=2.0)
    del kube.calls[:]
    leader.run_round()
    assert [c.op for c in kube.calls] == ["replace", "get", "replace"]
    assert leader.is_leader and events == ["started"]
    lease = kube.stored(LEASE, "default", "addon-status") or {}
    assert lease["metadata"]["labels"] == {"team": "obs"}  # the other writer's change is kept
    assert lease["spec"]["renewTime"] == "2025-01-01T12:00:02.000000Z"
    clock.move(seconds=2.0)
    del kube.calls[:]
    leader.run_round()
    assert [c.op for c in kube.calls] == ["replace"]  # undisturbed again: no read
