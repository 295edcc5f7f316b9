"""Leader election on a real Lease through the real client: two replicas are never both
leaders (sampled over many renew cycles while renewals are slowed past the deadline and
leaders are killed); a released Lease is taken over at once; a killed leader's Lease only
after it expired; a stopping leader steps down before it releases; the metrics follow; an API
server that stops answering makes the leader step down, say so once, and show the Lease's age;
an undisturbed leader renews with one update and no read (the server's audit says so).
Short durations (lease 1 s, renew deadline 0.6 s, retry 0.2 s) keep this fast.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from controller.kube.connection import Connection
from controller.kube.rest import RestKube
from controller.ops.leader import LeaderElector, LeaderMetrics, SystemClock
from kubesim import APIServer, RequestInfo, UserInfo
from tests.spoke.replication.conftest import ADMIN, TOKENS, api_client
from tests.support import connection, eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]
LEASE = "addon-status"
NAMESPACE = "default"
FAST = {"lease_duration": 1.0, "renew_deadline": 0.6, "retry_period": 0.2}


@pytest.fixture
def lease_server() -> Iterator[APIServer]:
    tokens = {
        **TOKENS,
        "token-a": UserInfo("a"),
        "token-b": UserInfo("b"),
        "token-c": UserInfo("c"),
    }
    with APIServer([], tokens=tokens) as server:
        yield server


@pytest.fixture
def elector(lease_server: APIServer) -> Iterator[Callable[..., LeaderElector]]:
    started: list[tuple[LeaderElector, Connection]] = []

    def make(identity: str, *, start: bool = True, **options: Any) -> LeaderElector:
        api = connection(lease_server, f"token-{identity}")
        settings: dict[str, Any] = {
            "namespace": NAMESPACE,
            "name": LEASE,
            "identity": identity,
            "clock": SystemClock(),
            "on_started_leading": lambda: None,
            "on_stopped_leading": lambda: None,
            **FAST,
            **options,
        }
        made = LeaderElector(RestKube(api, request_timeout=0.3), **settings)
        if start:
            made.start()
        started.append((made, api))
        return made

    yield make
    for made, api in started:
        assert made.stop(release=False, timeout=5), "the election thread did not stop"
        api.close()


def lease_spec(server: APIServer) -> client.V1LeaseSpec:
    with api_client(server, ADMIN) as admin:
        lease: client.V1Lease = client.CoordinationV1Api(admin).read_namespaced_lease(
            LEASE, NAMESPACE
        )
    assert lease.spec is not None
    return lease.spec


def test_two_replicas_are_never_both_leaders(
    lease_server: APIServer, elector: Callable[..., LeaderElector]
) -> None:
    candidates = {name: elector(name) for name in ("a", "b")}
    overlaps: list[str] = []
    leaders_seen: set[str] = set()
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            leading = [name for name, e in candidates.items() if e.is_leader]
            leaders_seen.update(leading)
            if len(leading) > 1:
                overlaps.append(",".join(leading))
            time.sleep(0.002)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        eventually(lambda: any(e.is_leader for e in candidates.values()), what="a first leader")
        for _ in range(2):
            leader = next(n for n, e in candidates.items() if e.is_leader)
            # the leader's renewals get slower than its renew deadline: it must step down
            # before the other may take the Lease
            lease_server.faults.delay(0.8, match=renewals_by(leader))
            other = candidates[next(n for n in candidates if n != leader)]
            eventually(
                lambda: other.is_leader,  # noqa: B023 - used at once
                timeout=5,
                what=f"{other.identity} to take over from {leader}",
            )
            lease_server.faults.delay(0)
        # a leader killed without release: the other waits for expiry, and the Lease never
        # has two leaders meanwhile either
        leader = next(n for n, e in candidates.items() if e.is_leader)
        candidates[leader].stop(release=False)
        candidates[leader] = elector("c")
        eventually(
            lambda: any(e.is_leader for e in candidates.values()),
            timeout=5,
            what="a leader after the kill",
        )
    finally:
        stop.set()
        sampler.join(2)
        lease_server.faults.delay(0)
    assert overlaps == []
    assert leaders_seen >= {"a", "b"}


def renewals_by(who: str) -> Callable[[RequestInfo], bool]:
    def match(info: RequestInfo) -> bool:
        return info.resource == "leases" and info.verb == "update" and info.user == who

    return match


def test_a_released_lease_is_taken_over_at_once(
    lease_server: APIServer, elector: Callable[..., LeaderElector]
) -> None:
    # the Lease would expire after 120 s: b leading within the 30 s waited for is the release
    slow = {"lease_duration": 120.0, "renew_deadline": 60.0, "retry_period": 0.1}
    first = elector("a", **slow)
    eventually(lambda: first.is_leader, what="a to lead")
    second = elector("b", **slow)
    eventually(lambda: second.holder == "a", what="b to see a's Lease")
    assert first.stop(release=True)
    eventually(lambda: second.is_leader, timeout=30, what="b to take over")
    assert not first.is_leader
    assert lease_spec(lease_server).lease_transitions == 1  # a created it, b took it


def test_a_killed_leader_is_replaced_after_its_lease_expired(
    lease_server: APIServer, elector: Callable[..., LeaderElector]
) -> None:
    first = elector("a")
    eventually(lambda: first.is_leader, what="a to lead")
    second = elector("b")
    eventually(lambda: second.holder == "a", what="b to see a's Lease")
    assert first.stop(release=False)
    last_renewal = lease_spec(lease_server).renew_time
    eventually(lambda: second.is_leader, timeout=5, what="b to take over")
    taken = lease_spec(lease_server)
    assert taken.holder_identity == "b"
    assert taken.acquire_time is not None and last_renewal is not None
    assert taken.acquire_time > last_renewal + timedelta(seconds=1)


def test_a_stopping_leader_steps_down_before_it_releases(
    lease_server: APIServer, elector: Callable[..., LeaderElector]
) -> None:
    holder_when_stepping_down: list[str | None] = []

    def stepped_down() -> None:
        holder_when_stepping_down.append(lease_spec(lease_server).holder_identity)

    leader = elector("a", on_stopped_leading=stepped_down)
    eventually(lambda: leader.is_leader, what="a to lead")
    assert leader.stop(release=True)
    assert holder_when_stepping_down == ["a"]  # still ours while the controller drained
    released = lease_spec(lease_server)
    assert released.holder_identity is None
    assert released.lease_duration_seconds == 1


def test_callbacks_and_metrics_follow_leadership(
    lease_server: APIServer, elector: Callable[..., LeaderElector]
) -> None:
    registry = CollectorRegistry()
    events: list[str] = []
    leader = elector(
        "a",
        metrics=LeaderMetrics(registry),
        on_started_leading=lambda: events.append("started"),
        on_stopped_leading=lambda: events.append("stopped"),
    )
    assert registry.get_sample_value("addon_status_lease_renew_age_seconds") == float("inf")
    eventually(lambda: leader.is_leader, what="a to lead")
    assert registry.get_sample_value("addon_status_leader_transitions_total") == 1
    leader.stop()
    assert events == ["started", "stopped"]
    assert registry.get_sample_value("addon_status_leader_transitions_total") == 2
    age = registry.get_sample_value("addon_status_lease_renew_age_seconds")
    assert age is not None and 0 <= age < float("inf")


def test_inconsistent_durations_are_refused(lease_server: APIServer) -> None:
    with connection(lease_server) as api, pytest.raises(ValueError, match="lease_duration"):
        LeaderElector(
            RestKube(api),
            namespace=NAMESPACE,
            name=LEASE,
            identity="a",
            clock=SystemClock(),
            lease_duration=1.0,
            renew_deadline=2.0,
            retry_period=0.2,
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )


class _FailingOnceClock(SystemClock):
    """Wall time that breaks once (a bug, an odd value from the server): the first `now()`."""

    def __init__(self) -> None:
        self.failed = False

    def now(self) -> datetime:
        if not self.failed:
            self.failed = True
            raise RuntimeError("boom")
        return super().now()


def test_an_unexpected_error_in_a_round_does_not_end_the_election(
    lease_server: APIServer, elector: Callable[..., LeaderElector]
) -> None:
    clock = _FailingOnceClock()
    leader = elector("a", clock=clock)
    eventually(lambda: clock.failed, what="the failing round")
    eventually(lambda: leader.is_leader, what="a to lead after the failed round")


def test_an_outage_past_the_renew_deadline_is_logged_once_and_the_age_shows_it(
    lease_server: APIServer,
    elector: Callable[..., LeaderElector],
    caplog: pytest.LogCaptureFixture,
) -> None:
    registry = CollectorRegistry()
    leader = elector("a", metrics=LeaderMetrics(registry))
    eventually(lambda: leader.is_leader, what="a to lead")
    age = "addon_status_lease_renew_age_seconds"
    with caplog.at_level(logging.INFO, logger="controller.ops.leader"):
        lease_server.faults.fail_next(10_000, 503, match=lambda info: info.resource == "leases")
        eventually(lambda: not leader.is_leader, what="a to step down")
        eventually(lambda: "stopped leading" in caplog.text, what="the step-down")
        assert (registry.get_sample_value(age) or 0.0) >= FAST["renew_deadline"]
        lease_server.faults.reset()
        eventually(lambda: leader.is_leader, what="a to lead again once the server answers")
    deadline = [r for r in caplog.records if "renew deadline" in r.getMessage()]
    assert len(deadline) == 1 and deadline[0].levelno == logging.WARNING


def test_an_undisturbed_leader_renews_with_one_update_and_no_read(
    lease_server: APIServer,
) -> None:
    """client-go's fast path, in the server's audit: each renewal is one `update` of the Lease.
    A long renew deadline and request timeout keep a busy machine from stepping the leader down
    (which would rightly read the Lease again)."""
    with connection(lease_server, "token-a") as api:
        leader = LeaderElector(
            RestKube(api, request_timeout=5.0),
            namespace=NAMESPACE,
            name=LEASE,
            identity="a",
            clock=SystemClock(),
            lease_duration=15.0,
            renew_deadline=10.0,
            retry_period=0.1,
            on_started_leading=lambda: None,
            on_stopped_leading=lambda: None,
        )
        leader.start()
        try:
            eventually(lambda: leader.is_leader, what="a to lead")
            lease_server.clear_audit()

            def renewals() -> list[str]:
                return [r.verb for r in lease_server.audit if r.resource == "leases"]

            eventually(lambda: len(renewals()) >= 5, what="five renewals")
            assert leader.is_leader
            assert set(renewals()) == {"update"}
        finally:
            assert leader.stop(release=False, timeout=5)
