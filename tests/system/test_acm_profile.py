"""The acm profile end to end (docs/spec.md §11): replicas built from `--profile acm` against spoke
and hub API servers that serve the upstream ObservabilityAddon CRD, which prunes everything but
the five fields of each condition. The CR carries the profile's names; what the controller
needs across a restart or a failover lives in the ConfigMap `<addon>-status` owned by the CR;
a restart in the middle of a dampening window and a failover between two replicas with leader
election lose nothing, and the window still ends on time; a CR status write rejected as invalid
puts the ConfigMap back too."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller import ReportClient
from controller.reporter.client import ReportRejected
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION
from controller.spoke.bookkeeping import KEY
from kubesim import APIServer, RequestInfo
from statemachines.placement import UPSTREAM_CONDITION_FIELDS
from tests.clock import T0, FakeClock
from tests.kubesim.test_upstream_crd import UPSTREAM_CRD
from tests.support import condition_of, eventually, true_type
from tests.system.conftest import (
    CLUSTER,
    MC,
    NAME,
    SPOKE_NAMESPACE,
    UWL,
    WAIT,
    ReplicaFactory,
    api_client,
    boot,
    conditions,
    status_of,
    status_writes,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
Reporters = Callable[..., ReportClient]
STATUS_CONFIG_MAP = f"{NAME}-status"
STANDARD = ["Available", "Progressing", "Degraded"]


@pytest.fixture
def crd() -> Path:
    """Both servers serve the upstream ObservabilityAddon CRD, as ACM installs it."""
    return UPSTREAM_CRD


def kept(server: APIServer) -> tuple[dict[str, Any], dict[str, Any]]:
    """The bookkeeping ConfigMap as stored, and the JSON it keeps."""
    found = server.get_object("", "v1", "configmaps", SPOKE_NAMESPACE, STATUS_CONFIG_MAP)
    assert found is not None, "no bookkeeping ConfigMap"
    return found, json.loads(found["data"][KEY])


def collector(bookkeeping: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in bookkeeping["collectors"] if c["name"] == name)


def open_window(reporter: ReportClient, clock: FakeClock) -> None:
    """ForwardFailed on the primary at T0+1m: a 10-minute window opens, ending at T0+11m."""
    clock.move(minutes=1)
    opened = reporter.report(MC, reason="ForwardFailed", message="remote write 503")
    assert opened["verdict"] == "pending", opened
    assert opened["deadline"] == "2025-01-01T12:11:00Z"


def ends_on_time(server: APIServer, clock: FakeClock, tick: Callable[[], object]) -> None:
    deadline = T0 + timedelta(minutes=11)
    clock.move(seconds=(deadline - clock()).total_seconds() - 1)
    tick()
    assert true_type(status_of(server, SPOKE_NAMESPACE)) == "Available"
    clock.move(seconds=1)
    tick()
    status = status_of(server, SPOKE_NAMESPACE)
    assert true_type(status) == "Degraded"
    fired = condition_of(status, "MetricsCollector")
    assert (fired["reason"], fired["lastTransitionTime"]) == (
        "ForwardFailed",
        "2025-01-01T12:11:00Z",
    )


def test_the_acm_cr_carries_the_profiles_names_and_the_configmap_the_rest(
    spoke_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    replica = replicas("a", profile="acm")
    reporter = reporters(replica.report_url)
    boot(reporter)
    status = status_of(spoke_server, SPOKE_NAMESPACE)
    assert [c["type"] for c in conditions(status)] == [
        *STANDARD,
        "MetricsCollector",
        "UwlMetricsCollector",
    ]
    assert {tuple(sorted(c)) for c in conditions(status)} == {
        tuple(sorted(UPSTREAM_CONDITION_FIELDS))
    }
    assert condition_of(status, "Available")["status"] == "True"

    config_map, bookkeeping = kept(spoke_server)
    addon = spoke_server.get_object(GROUP, VERSION, PLURAL, SPOKE_NAMESPACE, NAME)
    assert addon is not None
    (owner,) = config_map["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        KIND,
        NAME,
        addon["metadata"]["uid"],
        True,
    )
    # What the upstream CRD prunes is kept here: generations, the machines' states.
    assert {c["observedGeneration"] for c in bookkeeping["conditions"]} == {1}
    assert collector(bookkeeping, MC)["state"] == "Available"

    writes = status_writes(spoke_server)
    maps = spoke_server.count_requests(verbs=("update", "create"), resource="configmaps")
    again = reporter.report(MC, reason="ForwardSuccessful", message="ok")
    assert again["verdict"] == "heartbeat"
    assert status_writes(spoke_server) == writes  # a heartbeat writes nothing
    assert spoke_server.count_requests(verbs=("update", "create"), resource="configmaps") == maps


def test_an_acm_restart_in_the_middle_of_a_dampening_window_loses_nothing(
    spoke_server: APIServer,
    replicas: ReplicaFactory,
    reporters: Reporters,
    clock: FakeClock,
) -> None:
    first = replicas("a", profile="acm")
    boot(reporters(first.report_url))
    open_window(reporters(first.report_url), clock)
    _, before = kept(spoke_server)
    assert collector(before, MC)["pendingReason"] == "ForwardFailure"
    first.stop()

    clock.move(minutes=3)
    second = replicas("b", profile="acm")
    _, after = kept(spoke_server)
    assert collector(after, MC)["pendingSince"] == collector(before, MC)["pendingSince"]
    ends_on_time(spoke_server, clock, lambda: second.worker.tick().result(WAIT))


def test_an_acm_failover_between_two_replicas_with_leader_election_loses_nothing(
    spoke_server: APIServer,
    hub_server: APIServer,
    replicas: ReplicaFactory,
    reporters: Reporters,
    clock: FakeClock,
) -> None:
    a = replicas("a", profile="acm", leader_elect=True)
    eventually(lambda: a.leading, what="a to lead")
    b = replicas("b", profile="acm", leader_elect=True)
    to_a = reporters(a.report_url)
    boot(to_a)
    open_window(to_a, clock)

    a.stop(release=False)  # killed: the Lease stays a's until it expires
    to_b = reporters(b.report_url, retries=60, deadline=2 * WAIT)
    clock.move(minutes=1)
    heartbeat = to_b.report(UWL, reason="ForwardSuccessful", message="sent")
    assert heartbeat["verdict"] == "heartbeat", heartbeat  # b judged it against a's state
    assert b.leading
    _, bookkeeping = kept(spoke_server)
    assert collector(bookkeeping, MC)["pendingSince"].startswith("2025-01-01T12:01:00")
    ends_on_time(spoke_server, clock, lambda: b.worker.tick().result(WAIT))

    status = status_of(spoke_server, SPOKE_NAMESPACE)
    eventually(
        lambda: conditions(status_of(hub_server, CLUSTER)) == conditions(status),
        what="b's hub copy on the upstream CRD",
    )


def test_an_acm_cr_created_anew_does_not_resume_from_the_old_crs_configmap(
    spoke_server: APIServer, replicas: ReplicaFactory, reporters: Reporters, clock: FakeClock
) -> None:
    """The ConfigMap names its owner's uid: a ConfigMap left by a deleted CR (the garbage
    collector had not removed it yet) is not the new CR's history."""
    first = replicas("a", profile="acm")
    boot(reporters(first.report_url))
    open_window(reporters(first.report_url), clock)
    first.stop()
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": {"name": NAME}}
    with api_client(spoke_server) as admin:
        objects = client.CustomObjectsApi(admin)
        objects.delete_namespaced_custom_object(GROUP, VERSION, SPOKE_NAMESPACE, PLURAL, NAME)
        created = objects.create_namespaced_custom_object(
            GROUP, VERSION, SPOKE_NAMESPACE, PLURAL, body
        )
    second = replicas("b", profile="acm")
    assert second.leading
    eventually(
        lambda: true_type(status_of(spoke_server, SPOKE_NAMESPACE)) == "Progressing",
        what="the new CR's first status",
    )
    config_map, bookkeeping = kept(spoke_server)
    (owner,) = config_map["metadata"]["ownerReferences"]
    assert owner["uid"] == created["metadata"]["uid"]
    assert "pendingReason" not in collector(bookkeeping, MC)


def _cr_status_write(info: RequestInfo) -> bool:
    return (info.resource, info.subresource, info.verb) == (PLURAL, "status", "update")


def _rejected_then_served(server: APIServer, reporter: ReportClient) -> None:
    """A change whose CR write gets 422 is answered 422; the next good change is written."""
    invalid = "status.conditions[0].message: Invalid value"
    server.faults.fail_next(1, 422, match=_cr_status_write, message=invalid)
    with pytest.raises(ReportRejected) as rejected:
        reporter.report(None, reason="UpdateFailed", message="image pull backoff")
    assert rejected.value.status == 422
    assert invalid in rejected.value.message


def test_an_acm_status_write_rejected_as_invalid_puts_the_configmap_back_too(
    spoke_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    replica = replicas("a", profile="acm")
    reporter = reporters(replica.report_url)
    boot(reporter)
    _, before = kept(spoke_server)
    status = status_of(spoke_server, SPOKE_NAMESPACE)

    _rejected_then_served(spoke_server, reporter)

    assert kept(spoke_server)[1] == before  # written before the CR, and put back
    assert status_of(spoke_server, SPOKE_NAMESPACE) == status
    again = reporter.report(None, reason="UpdateFailed", message="image pull backoff")
    assert again["verdict"] == "accepted", again
    assert true_type(status_of(spoke_server, SPOKE_NAMESPACE)) == "Degraded"
    assert collector(kept(spoke_server)[1], MC)["state"] == "Degraded"


def test_an_acm_bookkeeping_that_cannot_be_put_back_at_once_is_put_back_later(
    spoke_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    replica = replicas("a", profile="acm")
    reporter = reporters(replica.report_url)
    boot(reporter)
    _, before = kept(spoke_server)
    status = status_of(spoke_server, SPOKE_NAMESPACE)
    updates = iter(range(2))

    def the_restore(info: RequestInfo) -> bool:  # the second update: the first is the change
        return (info.resource, info.verb) == ("configmaps", "update") and next(updates, 1) == 1

    spoke_server.faults.fail_next(1, 503, match=the_restore)

    _rejected_then_served(spoke_server, reporter)

    assert spoke_server.faults.pending() == 0  # the restore did fail
    assert replica.registry.get_sample_value("addon_status_status_write_failures_total") == 1.0
    eventually(lambda: kept(spoke_server)[1] == before, what="the ConfigMap put back")
    assert status_of(spoke_server, SPOKE_NAMESPACE) == status
    again = reporter.report(None, reason="UpdateFailed", message="image pull backoff")
    assert again["verdict"] == "accepted", again
    assert collector(kept(spoke_server)[1], MC)["state"] == "Degraded"
