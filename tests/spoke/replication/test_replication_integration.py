"""Replication through the real `kubernetes` client to a real HTTP hub (docs/spec.md §7): the
spoke's status reaches the hub copy; the hub down for a while, then the newest status once it
is back, while publishing never waits; a burst becomes few writes; a 409 is
retried with a fresh read; 429 `Retry-After` is honoured; a 401 reloads the kubeconfig and a
rotated credential recovers; the resync repairs a hub copy someone else changed; a missing hub
copy is never created.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from controller.kube.kubeconfig import kubeconfig_yaml
from controller.spoke.addon import GROUP, PLURAL, VERSION
from controller.spoke.replication import HubReplicator
from kubesim import APIServer, RequestInfo, UserInfo
from tests.kube.mount import SecretMount
from tests.spoke.replication.conftest import (
    ADMIN,
    CLUSTER,
    HUB_TOKEN,
    NAME,
    SPOKE_NAMESPACE,
    TOKENS,
    api_client,
)
from tests.support import eventually

pytestmark = pytest.mark.integration
Factory = Callable[..., HubReplicator]
HUB_USER = TOKENS[HUB_TOKEN].username


def conditions(n: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "Available",
            "status": "True",
            "reason": "ForwardSuccessful",
            "message": f"status #{n}",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
            "observedGeneration": 1,
        }
    ]


def write_spoke(spoke: APIServer, n: int) -> dict[str, Any]:
    """Write status #n on the spoke CR as the controller does; what the spoke stored is
    what gets published."""
    with api_client(spoke) as admin:
        api = client.CustomObjectsApi(admin)
        obj: dict[str, Any] = api.get_namespaced_custom_object(  # type: ignore[assignment]
            GROUP, VERSION, SPOKE_NAMESPACE, PLURAL, NAME
        )
        obj["status"] = {"conditions": conditions(n)}
        stored: dict[str, Any] = api.replace_namespaced_custom_object_status(  # type: ignore[assignment]
            GROUP, VERSION, SPOKE_NAMESPACE, PLURAL, NAME, obj
        )
    status: dict[str, Any] = stored["status"]
    return status


def hub_status(hub: APIServer) -> dict[str, Any]:
    obj = hub.get_object(GROUP, VERSION, PLURAL, CLUSTER, NAME)
    assert obj is not None
    return dict(obj.get("status") or {})


def hub_message(hub: APIServer) -> str | None:
    found = hub_status(hub).get("conditions") or [{}]
    message: str | None = found[0].get("message")
    return message


def status_writes(hub: APIServer, *, successful: bool = True) -> int:
    return hub.count_requests(
        verbs=["update"],
        resource=PLURAL,
        subresource="status",
        user=HUB_USER,
        successful=successful,
    )


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def is_status_write(info: RequestInfo) -> bool:
    return info.resource == PLURAL and info.subresource == "status" and info.verb == "update"


def test_the_spoke_status_reaches_the_hub_copy(
    spoke: APIServer, hub_server: APIServer, replicator: Factory
) -> None:
    rep = replicator()
    published = write_spoke(spoke, 1)
    rep.publish(published)
    assert rep.wait_synced(5)
    assert hub_status(hub_server) == published
    assert status_writes(hub_server) == 1
    # the hub was written with the hub's credentials, the spoke with the spoke's
    assert {r.user for r in hub_server.audit if r.verb == "update"} == {HUB_USER}
    rep.publish(published)  # unchanged: read, compare, no write
    assert rep.wait_synced(5)
    assert status_writes(hub_server) == 1


def test_the_hub_catches_up_with_the_newest_status_after_an_outage(
    spoke: APIServer, hub_server: APIServer, replicator: Factory, registry: CollectorRegistry
) -> None:
    rep = replicator()
    rep.publish(write_spoke(spoke, 1))
    assert rep.wait_synced(5)
    hub_server.stop()
    for n in range(2, 6):  # the spoke goes on at full speed
        rep.publish(write_spoke(spoke, n))
    eventually(
        lambda: metric(registry, "addon_status_hub_errors_total", kind="network") >= 2,
        what="failed attempts against the stopped hub",
    )
    assert hub_message(hub_server) == "status #1"
    assert rep.last_synced_sequence == 1
    hub_server.start()
    assert rep.wait_synced(10)
    assert hub_message(hub_server) == "status #5"
    assert status_writes(hub_server) == 2  # before the outage, and the newest after it


def test_publishing_does_not_wait_for_a_hung_hub(
    hub_server: APIServer, replicator: Factory
) -> None:
    hub_server.faults.delay(1.0, n=1)  # the hub accepts the call and says nothing for a while
    rep = replicator()
    rep.publish({"conditions": conditions(1)})
    done = threading.Event()

    def burst() -> None:
        for n in range(2, 200):
            rep.publish({"conditions": conditions(n)})
        done.set()

    threading.Thread(target=burst, daemon=True).start()
    assert done.wait(0.9), "publish waited for the hub"
    assert rep.wait_synced(10)
    assert hub_message(hub_server) == "status #199"


def test_a_burst_becomes_a_few_writes_of_the_newest(
    hub_server: APIServer, replicator: Factory
) -> None:
    hub_server.faults.delay(0.05, match=is_status_write)  # a slow hub
    rep = replicator()
    for n in range(1, 51):
        rep.publish({"conditions": conditions(n)})
    assert rep.wait_synced(10)
    assert hub_message(hub_server) == "status #50"
    assert status_writes(hub_server) <= 5


def test_a_conflict_is_retried_with_a_fresh_read(
    hub_server: APIServer, replicator: Factory, registry: CollectorRegistry
) -> None:
    hub_server.faults.conflict_next_write(1, match=is_status_write)
    rep = replicator(backoff_base=30.0, backoff_max=30.0)  # no backoff may hide in the retry
    rep.publish({"conditions": conditions(1)})
    assert rep.wait_synced(5)
    calls = [(r.verb, r.code) for r in hub_server.audit if r.user == HUB_USER]
    assert calls == [("get", 200), ("update", 409), ("get", 200), ("update", 200)]
    assert metric(registry, "addon_status_hub_errors_total", kind="conflict") == 1


def test_retry_after_is_honoured(hub_server: APIServer, replicator: Factory) -> None:
    hub_server.faults.fail_next(1, 429, retry_after=1)
    rep = replicator()
    began = time.monotonic()
    rep.publish({"conditions": conditions(1)})
    assert rep.wait_synced(5)
    assert time.monotonic() - began >= 1.0
    assert hub_message(hub_server) == "status #1"


def test_a_rotated_credential_is_picked_up_after_a_401(
    hub_server: APIServer,
    hub_mount: SecretMount,
    replicator: Factory,
    registry: CollectorRegistry,
) -> None:
    rep = replicator()
    rep.publish({"conditions": conditions(1)})
    assert rep.wait_synced(5)
    rotated = {ADMIN: TOKENS[ADMIN], "hub-token-2": UserInfo(HUB_USER)}
    hub_server.set_tokens(rotated)  # the hub revokes the old token ...
    rep.publish({"conditions": conditions(2)})
    eventually(
        lambda: metric(registry, "addon_status_hub_errors_total", kind="unauthorized") >= 2,
        what="401s with the old token",
    )
    assert hub_message(hub_server) == "status #1"
    hub_mount.write(kubeconfig_yaml(server=hub_server.url, token="hub-token-2"))  # ... rotates
    assert rep.wait_synced(5)
    assert hub_message(hub_server) == "status #2"


def test_a_broken_kubeconfig_rotation_keeps_the_working_client(
    hub_server: APIServer, hub_mount: SecretMount, replicator: Factory
) -> None:
    rep = replicator()
    hub_mount.write("clusters: [")  # a broken Secret update
    rep.publish({"conditions": conditions(1)})
    assert rep.wait_synced(5)
    assert hub_message(hub_server) == "status #1"


def test_the_resync_repairs_a_hub_copy_someone_else_changed(
    hub_server: APIServer, replicator: Factory
) -> None:
    rep = replicator(resync_interval=0.2)
    rep.publish({"conditions": conditions(1)})
    assert rep.wait_synced(5)
    obj = hub_server.get_object(GROUP, VERSION, PLURAL, CLUSTER, NAME)
    assert obj is not None
    hub_server.put_object(GROUP, VERSION, PLURAL, {**obj, "status": {"conditions": conditions(9)}})
    assert hub_message(hub_server) == "status #9"
    eventually(lambda: hub_message(hub_server) == "status #1", what="the resync's repair")


def test_a_missing_hub_copy_is_never_created(
    hub_server: APIServer, replicator: Factory, registry: CollectorRegistry
) -> None:
    assert hub_server.delete_object(GROUP, VERSION, PLURAL, CLUSTER, NAME)
    rep = replicator()
    rep.publish({"conditions": conditions(1)})
    eventually(
        lambda: metric(registry, "addon_status_hub_errors_total", kind="not_found") >= 2,
        what="404s retried with backoff",
    )
    assert hub_server.count_requests(verbs=["create"], user=HUB_USER, successful=False) == 0
    assert rep.last_synced_sequence == 0
