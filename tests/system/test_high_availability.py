"""Two replicas on one spoke with leader election on a Lease (1 s, renew 0.6 s, retry 0.2 s): only
the Lease holder ever writes the status (the spoke's audit log shows each replica's own token);
the follower is ready but answers reports with 503, `Retry-After` and a closed connection, and a
client that retries reaches the new leader after a hand-over; a leader killed in the middle of a
dampening window is replaced once its Lease expired, the new leader resumes the window from the
CR and ends it on time, and no report the old leader accepted is lost."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller import ReportClient
from controller.spoke.addon import PLURAL
from controller.spoke.app import Replica
from kubesim import APIServer
from tests.clock import T0, FakeClock
from tests.support import condition_of, eventually, true_type
from tests.system.conftest import (
    CLUSTER,
    MC,
    SPOKE_NAMESPACE,
    UWL,
    WAIT,
    ReplicaFactory,
    boot,
    conditions,
    probe,
    replica_pod,
    status_of,
    status_writes,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
Reporters = Callable[..., ReportClient]
REPLICA_PODS = {replica_pod("a"), replica_pod("b")}


def status_puts_by_non_holders(server: APIServer) -> list[str]:
    """Status PUTs by a replica while the last Lease write was another replica's.

    A replica writes the Lease only to take or renew it (followers only read it), so the
    author of the latest successful Lease write is the holder at that point of the log.
    """
    holder, offences = "", []
    for record in server.audit:
        if not 200 <= record.code < 300 or record.pod not in REPLICA_PODS:
            continue
        status_put = (record.resource, record.subresource, record.verb) == (
            PLURAL,
            "status",
            "update",
        )
        if record.resource == "leases" and record.verb in ("create", "update"):
            holder = record.pod
        elif status_put and record.pod != holder:
            offences.append(f"{record.pod} wrote while {holder or 'nobody'} held the Lease")
    return offences


def post_report(url: str, body: dict[str, Any]) -> tuple[int, dict[str, str], dict[str, Any]]:
    """One raw POST, no retries: (status, headers, JSON body)."""
    request = urllib.request.Request(
        url + "/v1/reports",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=WAIT) as answer:
            return answer.status, dict(answer.headers), json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), json.loads(error.read())


def metrics(url: str, name: str) -> float:
    """One unlabelled sample from the replica's /metrics."""
    with urllib.request.urlopen(url + "/metrics", timeout=WAIT) as answer:
        text = answer.read().decode()
    families = text_string_to_metric_families(text)
    return next(s.value for f in families for s in f.samples if s.name == name and not s.labels)


def leader_and_follower(replicas: ReplicaFactory) -> tuple[Replica, Replica]:
    leader = replicas("a", leader_elect=True)
    eventually(lambda: leader.leading, what="a to lead")
    follower = replicas("b", leader_elect=True)
    assert follower.elector is not None
    eventually(lambda: follower.elector.holder == "a", what="b to see a's Lease")  # type: ignore[union-attr]
    return leader, follower


def in_background(send: Callable[[], dict[str, Any]]) -> tuple[threading.Thread, list[Any]]:
    results: list[Any] = []

    def run() -> None:
        try:
            results.append(send())
        except Exception as error:
            results.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, results


def test_one_writer_a_follower_says_503_and_a_retrying_client_reaches_the_next_leader(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    a, b = leader_and_follower(replicas)
    assert (probe(a.probe_url, "/readyz"), probe(b.probe_url, "/readyz")) == (200, 200)
    assert (probe(a.probe_url, "/healthz"), probe(b.probe_url, "/healthz")) == (200, 200)
    with urllib.request.urlopen(a.probe_url + "/healthz?verbose", timeout=WAIT) as answer:
        lines = answer.read().decode().splitlines()
    # Every thread of a leading replica is checked by one of these.
    assert {line[3:].split(" ")[0] for line in lines if line.startswith("[+]")} == {
        "event-recorder", "worker", "watch", "report-api", "hub-replication",
        "leader-election", "metrics", "probes", "deadlines",
    }  # fmt: skip
    code, headers, body = post_report(b.report_url, {"reason": "UpdateSuccessful"})
    assert (code, body["error"]["reason"], headers.get("Retry-After")) == (503, "NotLeader", "1")
    assert headers.get("Connection") == "close"  # the retry opens a new connection

    boot(reporters(a.report_url))
    # the follower's client retries (Retry-After) while a hands over to b
    to_b = reporters(b.report_url, retries=60, deadline=2 * WAIT)
    sender, answers = in_background(
        lambda: to_b.report(None, reason="UpdateFailure", message="rollout failed")
    )
    eventually(lambda: b.report_server is not None, what="b's report API")
    a.stop()  # graceful: drains, then releases the Lease
    sender.join(2 * WAIT)
    assert answers and answers[0]["verdict"] == "accepted", answers
    assert true_type(status_of(spoke_server, SPOKE_NAMESPACE)) == "Degraded"
    assert probe(b.probe_url, "/readyz") == 200
    assert metrics(b.metrics_url, "addon_status_leader") == 1
    assert metrics(b.metrics_url, "addon_status_leader_transitions_total") == 1

    assert status_writes(spoke_server, pod=replica_pod("a")) >= 3
    assert status_writes(spoke_server, pod=replica_pod("b")) >= 1
    assert status_puts_by_non_holders(spoke_server) == []
    eventually(
        lambda: (
            conditions(status_of(hub_server, CLUSTER))
            == conditions(status_of(spoke_server, SPOKE_NAMESPACE))
        ),
        what="b's hub copy",
    )


def test_a_leader_killed_mid_window_is_replaced_and_the_window_ends_on_time(
    spoke_server: APIServer,
    hub_server: APIServer,
    replicas: ReplicaFactory,
    reporters: Reporters,
    clock: FakeClock,
) -> None:
    a, b = leader_and_follower(replicas)
    to_a = reporters(a.report_url)
    boot(to_a)
    clock.move(minutes=1)
    opened = to_a.report(MC, reason="ForwardFailure", message="remote write 503")
    assert opened["verdict"] == "pending"
    assert opened["deadline"] == "2025-01-01T12:11:00Z"
    clock.move(minutes=1)
    second = to_a.report(UWL, reason="ForwardFailure", message="remote write 502")
    assert second["verdict"] == "pending"

    a.stop(release=False)  # killed: the Lease stays a's until it expires
    assert not b.leading
    to_b = reporters(b.report_url, retries=60, deadline=2 * WAIT)
    recovered = to_b.report(UWL, reason="ForwardSuccessful", message="sent")
    assert recovered["verdict"] != "refused", recovered  # b judged it against a's state
    assert b.leading
    status = status_of(spoke_server, SPOKE_NAMESPACE)
    mc = next(c for c in status["collectors"] if c["name"] == MC)
    assert mc["pendingSince"].startswith("2025-01-01T12:01:00")  # a's accepted report
    uwl = next(c for c in status["collectors"] if c["name"] == UWL)
    assert "pendingSince" not in uwl  # b's report closed uwl's window

    deadline = T0 + timedelta(minutes=11)
    clock.move(seconds=(deadline - clock()).total_seconds() - 1)
    b.worker.tick().result(WAIT)
    assert true_type(status_of(spoke_server, SPOKE_NAMESPACE)) == "Available"
    clock.move(seconds=1)
    b.worker.tick().result(WAIT)
    status = status_of(spoke_server, SPOKE_NAMESPACE)
    assert true_type(status) == "Degraded"
    fired = condition_of(status, "MetricsCollectorStatus")
    assert (fired["reason"], fired["lastTransitionTime"]) == (
        "ForwardFailure",
        "2025-01-01T12:11:00Z",
    )

    assert status_puts_by_non_holders(spoke_server) == []
    eventually(
        lambda: conditions(status_of(hub_server, CLUSTER)) == conditions(status),
        what="b's hub copy",
    )
