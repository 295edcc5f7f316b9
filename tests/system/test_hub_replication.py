"""One replica end to end, spoke and hub, over HTTP: reports reach the spoke CR before their
verdict comes back and then the hub copy; an update failure blocks Available on both; the
spoke never waits for the hub (an outage costs the hub copy its freshness, never a report),
and the hub catches up with the newest status; a burst becomes fewer hub writes; a hub copy
someone else changed is repaired by the resync; refused hub credentials are reloaded when the
kubeconfig is rotated; `--hub-copy status` copies the addon's story, never the bookkeeping."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from kubernetes import client

from controller import ReportClient
from controller.spoke.addon import GROUP, PLURAL, VERSION
from kubesim import APIServer, RequestInfo, UserInfo
from tests.support import condition_of, eventually, true_type
from tests.system.conftest import (
    ADMIN,
    CLUSTER,
    HUB_TOKENS,
    HUB_WRITER,
    MC,
    NAME,
    ROTATED_HUB_TOKEN,
    SPOKE_NAMESPACE,
    UWL,
    ReplicaFactory,
    api_client,
    boot,
    conditions,
    status_of,
    status_writes,
    write_kubeconfig,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
Reporters = Callable[..., ReportClient]


def hub_in_sync(spoke_server: APIServer, hub_server: APIServer) -> Callable[[], bool]:
    def check() -> bool:
        wanted = conditions(status_of(spoke_server, SPOKE_NAMESPACE))
        return bool(wanted) and conditions(status_of(hub_server, CLUSTER)) == wanted

    return check


def test_the_boot_sequence_reaches_the_spoke_then_the_hub(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    replica = replicas()
    boot(reporters(replica.report_url))
    # accepted means persisted: the CR held it before the answer came, no polling needed
    status = status_of(spoke_server, SPOKE_NAMESPACE)
    assert true_type(status) == "Available"
    assert {c["name"]: c["state"] for c in status["collectors"]} == {
        MC: "Available",
        UWL: "Available",
    }
    eventually(hub_in_sync(spoke_server, hub_server), what="the hub copy")
    assert true_type(status_of(hub_server, CLUSTER)) == "Available"
    assert "collectors" not in status_of(hub_server, CLUSTER)  # --hub-copy conditions


def test_status_copy_carries_the_story_but_never_the_bookkeeping(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    """`--hub-copy status`: Ready, history, versions, related objects (the addon CR and the
    Lease named by the shell) and lastKnownGood reach the hub; `collectors` never does."""
    replica = replicas(hub_copy="status", leader_elect=True)
    eventually(lambda: replica.leading, what="leadership")
    reporter = reporters(replica.report_url)
    reporter.report(reason="UpdateSuccessful", message="deployed", version="2.14.0")
    for collector in (MC, UWL):
        assert reporter.report(collector, reason="ForwardSuccessful")["verdict"] == "accepted"
    spoke = status_of(spoke_server, SPOKE_NAMESPACE)
    wanted = {k: v for k, v in spoke.items() if k != "collectors"}
    eventually(lambda: status_of(hub_server, CLUSTER) == wanted, what="the hub copy")
    hub = status_of(hub_server, CLUSTER)
    assert condition_of(hub, "Ready")["status"] == "True"
    assert [v["version"] for v in hub["versions"]] == ["2.14.0", "2.14.0"]
    resources = [o["resource"] for o in hub["relatedObjects"]]
    assert resources == [PLURAL, "leases"]
    assert hub["lastKnownGood"]["generation"] == 1
    assert "collectors" not in hub


def test_without_a_hub_kubeconfig_nothing_is_copied(
    hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    replica = replicas(hub_kubeconfig=None, cluster_name=None)
    assert replica.replication is None
    boot(reporters(replica.report_url))
    assert status_of(hub_server, CLUSTER) == {}
    assert status_writes(hub_server) == 0


def test_an_update_failure_blocks_available_on_spoke_and_hub(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    reporter = reporters(replicas().report_url)
    boot(reporter)
    failed = reporter.report(None, reason="UpdateFailure", message="rollout failed")
    blocked = reporter.report(MC, reason="ForwardSuccessful", message="sent")
    assert failed["verdict"] == "accepted"
    assert blocked["verdict"] == "refused" and blocked["rule"]
    eventually(hub_in_sync(spoke_server, hub_server), what="the hub copy")
    for status in (status_of(spoke_server, SPOKE_NAMESPACE), status_of(hub_server, CLUSTER)):
        assert true_type(status) == "Degraded"
        assert condition_of(status, "Available")["status"] == "False"
        assert condition_of(status, "Degraded")["reason"] == "UpdateFailure"


def test_the_spoke_goes_on_while_the_hub_is_down_and_the_hub_catches_up(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    replica = replicas()
    reporter = reporters(replica.report_url)
    boot(reporter)
    eventually(hub_in_sync(spoke_server, hub_server), what="the first hub copy")
    before_outage = conditions(status_of(hub_server, CLUSTER))
    writes = status_writes(spoke_server)

    hub_server.stop()
    for n in range(10):
        answer = reporter.report(UWL, reason="ForwardSuccessful", message=f"batch {n}")
        assert answer["verdict"] == "heartbeat", answer
    reporter.report(None, reason="UpdateFailure", message="rollout failed")
    assert status_writes(spoke_server) == writes + 11  # every change reached the spoke CR
    assert true_type(status_of(spoke_server, SPOKE_NAMESPACE)) == "Degraded"
    errors = {"kind": "network"}
    eventually(
        lambda: (
            (replica.registry.get_sample_value("addon_status_hub_errors_total", errors) or 0) > 0
        ),
        what="a failed hub call",
    )
    assert conditions(status_of(hub_server, CLUSTER)) == before_outage

    hub_server.start()
    eventually(hub_in_sync(spoke_server, hub_server), what="the hub to catch up")
    assert true_type(status_of(hub_server, CLUSTER)) == "Degraded"


def hub_status_puts(info: RequestInfo) -> bool:
    return info.resource == PLURAL and info.subresource == "status" and info.verb == "update"


def test_a_burst_of_changes_is_coalesced_on_the_hub(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    reporter = reporters(replicas().report_url)
    boot(reporter)
    eventually(hub_in_sync(spoke_server, hub_server), what="the first hub copy")
    spoke_before, hub_before = status_writes(spoke_server), status_writes(hub_server)
    hub_server.faults.delay(0.2, match=hub_status_puts)  # a hub slower than the burst
    try:
        for n in range(15):
            reporter.report(MC, reason="ForwardSuccessful", message=f"sent {n}")
        eventually(hub_in_sync(spoke_server, hub_server), what="the hub to catch up")
    finally:
        hub_server.faults.delay(0)
    spoke_writes = status_writes(spoke_server) - spoke_before
    hub_writes = status_writes(hub_server, user=HUB_WRITER) - hub_before
    assert spoke_writes == 15
    assert 1 <= hub_writes < spoke_writes
    assert condition_of(status_of(hub_server, CLUSTER), "MetricsCollectorStatus")["message"] == (
        "sent 14"
    )


def test_a_hub_copy_changed_by_someone_else_is_repaired_by_the_resync(
    spoke_server: APIServer, hub_server: APIServer, replicas: ReplicaFactory, reporters: Reporters
) -> None:
    reporter = reporters(replicas(hub_resync=timedelta(seconds=0.3)).report_url)
    boot(reporter)
    eventually(hub_in_sync(spoke_server, hub_server), what="the first hub copy")
    spoke_writes = status_writes(spoke_server)

    with api_client(hub_server, ADMIN) as admin:  # another writer, over the API
        objects = client.CustomObjectsApi(admin)
        obj = objects.get_namespaced_custom_object(GROUP, VERSION, CLUSTER, PLURAL, NAME)
        assert isinstance(obj, dict)
        condition_of(obj["status"], "Available").update(
            status="False", reason="Tampered", message="someone else"
        )
        objects.replace_namespaced_custom_object_status(GROUP, VERSION, CLUSTER, PLURAL, NAME, obj)
    assert condition_of(status_of(hub_server, CLUSTER), "Available")["reason"] == "Tampered"
    eventually(hub_in_sync(spoke_server, hub_server), what="the resync to repair the copy")
    assert status_writes(spoke_server) == spoke_writes  # repaired from the hub side alone


def test_refused_hub_credentials_recover_once_the_kubeconfig_is_rotated(
    spoke_server: APIServer,
    hub_server: APIServer,
    hub_kubeconfig: Path,
    replicas: ReplicaFactory,
    reporters: Reporters,
) -> None:
    replica = replicas()
    reporter = reporters(replica.report_url)
    boot(reporter)
    eventually(hub_in_sync(spoke_server, hub_server), what="the first hub copy")

    # the hub rotates the credential: the old token gets 401 from now on
    hub_server.set_tokens({ADMIN: HUB_TOKENS[ADMIN], ROTATED_HUB_TOKEN: UserInfo(HUB_WRITER)})
    reporter.report(None, reason="UpdateFailure", message="rollout failed")
    unauthorized = {"kind": "unauthorized"}
    eventually(
        lambda: (
            (replica.registry.get_sample_value("addon_status_hub_errors_total", unauthorized) or 0)
            > 0
        ),
        what="the hub to refuse the old token",
    )
    assert true_type(status_of(hub_server, CLUSTER)) == "Available"  # not synced yet

    write_kubeconfig(hub_kubeconfig, server=hub_server, token=ROTATED_HUB_TOKEN)
    eventually(hub_in_sync(spoke_server, hub_server), what="the hub copy with the new token")
    assert true_type(status_of(hub_server, CLUSTER)) == "Degraded"
