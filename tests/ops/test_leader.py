"""Leader election on the in-memory seam, with a clock the test moves: a leader whose renewals
fail steps down once the renew deadline passes, says so once, and the gauge of seconds since
the last renewal shows the outage before that."""

from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import LEASE
from controller.kube.fake import FakeKube
from controller.ops.leader import LeaderElector, LeaderMetrics

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


class MovedClock:
    """Wall and monotonic time, both moved only by the test."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.seconds)

    def monotonic(self) -> float:
        return self.seconds


def elector(kube: FakeKube, clock: MovedClock, registry: CollectorRegistry,
            events: list[str]) -> LeaderElector:
    return LeaderElector(
        kube, namespace="default", name="addon-status", identity="a", clock=clock,
        lease_duration=15.0, renew_deadline=10.0, retry_period=2.0,
        on_started_leading=lambda: events.append("started"),
        on_stopped_leading=lambda: events.append("stopped"),
        metrics=LeaderMetrics(registry),
    )


def test_a_leader_that_cannot_renew_steps_down_at_the_renew_deadline_and_says_so(
    caplog: pytest.LogCaptureFixture,
) -> None:
    kube, clock, registry, events = FakeKube(), MovedClock(), CollectorRegistry(), []
    leader = elector(kube, clock, registry, events)
    age = "addon_status_lease_renew_age_seconds"
    assert registry.get_sample_value(age) == float("inf")  # never renewed
    leader.run_round()
    assert leader.is_leader and events == ["started"]
    assert kube.stored(LEASE, "default", "addon-status") is not None
    kube.fail_next("get", 503, times=100)  # the API server stops answering
    with caplog.at_level(logging.WARNING, logger="controller.ops.leader"):
        for _ in range(4):  # 8 s: still within the deadline
            clock.seconds += 2.0
            leader.run_round()
        assert leader.is_leader and registry.get_sample_value(age) == 8.0
        for _ in range(3):  # 10 s and more: past it
            clock.seconds += 2.0
            leader.run_round()
    assert not leader.is_leader and events == ["started", "stopped"]
    assert registry.get_sample_value(age) == 14.0
    deadline = [r for r in caplog.records if "renew deadline" in r.getMessage()]
    assert len(deadline) == 1 and "stepping down" in deadline[0].getMessage()


def test_a_renewal_resets_the_age_of_the_lease() -> None:
    kube, clock, registry = FakeKube(), MovedClock(), CollectorRegistry()
    leader = elector(kube, clock, registry, [])
    leader.run_round()
    clock.seconds += 2.0
    assert registry.get_sample_value("addon_status_lease_renew_age_seconds") == 2.0
    leader.run_round()
    assert registry.get_sample_value("addon_status_lease_renew_age_seconds") == 0.0
