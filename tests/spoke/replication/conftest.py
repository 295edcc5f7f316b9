"""Two embedded API servers for the integration tests, as in production: the spoke (the addon
CR, the leader Lease) and the hub (the addon CR's copy in namespace `cluster1`, reached
through a kubeconfig in a Secret-like mount). Each test gets fresh servers on free loopback
ports; every thread a test starts is stopped in teardown."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry

from controller.kube.kubeconfig import KubeconfigSource, kubeconfig_yaml
from controller.ops.leader import SystemClock
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION
from controller.spoke.metrics import ReplicationMetrics
from controller.spoke.replication import HubReplicator
from kubesim import APIServer, UserInfo
from tests import support
from tests.kube.mount import SecretMount

CRD = Path(__file__).resolve().parents[3] / "manifests" / "base" / "crd.yaml"
CLUSTER = "cluster1"
SPOKE_NAMESPACE = "open-cluster-management-addon-observability"
NAME = "observability-addon"
ADMIN = "admin-token"
HUB_TOKEN = "hub-token-1"
TOKENS = {
    ADMIN: UserInfo("admin", groups=("system:masters",)),
    HUB_TOKEN: UserInfo("system:serviceaccount:cluster1:addon-status"),
}


def api_client(server: APIServer, token: str = ADMIN) -> client.ApiClient:
    return support.api_client(server, token)


def addon(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {"enableMetrics": True},
    }


def create_addon(server: APIServer, namespace: str) -> None:
    with api_client(server) as admin:
        core, custom = client.CoreV1Api(admin), client.CustomObjectsApi(admin)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace)))
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon(namespace))


@pytest.fixture
def spoke() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS) as server:
        create_addon(server, SPOKE_NAMESPACE)
        yield server


@pytest.fixture
def hub_server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS) as server:
        create_addon(server, CLUSTER)
        yield server


@pytest.fixture
def hub_mount(hub_server: APIServer, tmp_path: Path) -> SecretMount:
    mount = SecretMount(tmp_path / "hub-kubeconfig")
    mount.write(kubeconfig_yaml(server=hub_server.url, token=HUB_TOKEN))
    return mount


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def replicator(
    hub_mount: SecretMount, registry: CollectorRegistry
) -> Iterator[Callable[..., HubReplicator]]:
    """A started replicator of the spoke status to `cluster1/observability-addon` on the hub,
    with a short backoff so that outages in tests last tens of milliseconds, not minutes."""
    started: list[HubReplicator] = []

    def make(**options: Any) -> HubReplicator:
        settings: dict[str, Any] = {
            "namespace": CLUSTER,
            "name": NAME,
            "clock": SystemClock(),
            "metrics": ReplicationMetrics(registry),
            "backoff_base": 0.02,
            "backoff_max": 0.1,
            **options,
        }
        made = HubReplicator(KubeconfigSource(hub_mount.path), **settings)
        made.start()
        started.append(made)
        return made

    yield make
    for made in started:
        assert made.stop(timeout=10), "the replication thread did not stop"
