"""Health watches end to end (docs/spec.md §8 in the shell): a `Replica` configured with resources,
the real client over HTTP against the embedded API server, each object's kind found by
discovery. An object change
reaches the CR's status through the watch and the worker; a change that does not change the
result writes nothing; a deleted object is NotFound; a watch whose history was compacted lists
again (410 Gone); a kind the server does not serve stays Unknown/NotFound without a crash."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller.spoke.addon import GROUP, PLURAL, VERSION
from controller.spoke.app import Replica
from controller.spoke.options import Address, RunOptions
from kubesim import APIServer
from statemachines import Config
from statemachines.health import load_resources
from tests.support import WAIT, connection, eventually

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
CRD = ROOT / "manifests" / "base" / "crd.yaml"
NAMESPACE, NAME = "addons", "observability-addon"
LOOPBACK = Address(host="127.0.0.1", port=0)
OPTIONS = RunOptions(
    addon_namespace=NAMESPACE,
    addon_name=NAME,
    metrics_address=LOOPBACK,
    probe_address=LOOPBACK,
    report_address="127.0.0.1:0",
    insecure=True,
    request_timeout=5.0,
)
LABELS = {"app": "metrics-collector"}
RESOURCES = [
    {
        "name": "collector",
        "collector": "metrics-collector",
        "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "metrics-collector"},
        "healthRule": {"singleConditionType": "Available"},
    },
    {
        "name": "certificate",
        "object": {"apiVersion": "cert-manager.io/v1", "kind": "Certificate", "name": "app"},
        "healthRule": {"singleConditionType": "Ready"},
    },
]


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], namespaces=["default", NAMESPACE], watch_history=50) as srv:
        srv.put_object(
            GROUP,
            VERSION,
            PLURAL,
            {"metadata": {"name": NAME, "namespace": NAMESPACE}, "spec": {"enableMetrics": True}},
        )
        yield srv


@pytest.fixture
def api(server: APIServer) -> Iterator[client.ApiClient]:
    with client.ApiClient(client.Configuration(host=server.url)) as api_client:
        yield api_client


@pytest.fixture
def replica(server: APIServer) -> Iterator[Replica]:
    resources = load_resources(
        RESOURCES, namespace=NAMESPACE, collectors=["metrics-collector", "uwl-metrics-collector"]
    )
    config = Config.create(resources=resources)
    replica = Replica(OPTIONS, api_client=connection(server), config=config, watch_seconds=5)
    with replica as r:
        yield r


def _status(server: APIServer) -> dict[str, Any]:
    obj = server.get_object(GROUP, VERSION, PLURAL, NAMESPACE, NAME) or {}
    return dict(obj.get("status") or {})


def _health(server: APIServer, resource: str) -> tuple[str, str] | None:
    for entry in _status(server).get("resources") or []:
        if entry["name"] == resource and entry["conditions"]:
            condition = entry["conditions"][0]
            return condition["status"], condition["reason"]
    return None


def _status_writes(server: APIServer) -> int:
    return server.count_requests(verbs=("update",), resource=PLURAL, subresource="status")


def _create_deployment(apps: client.AppsV1Api) -> None:
    body = {
        "metadata": {"name": "metrics-collector"},
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{"name": "c", "image": "collector:1"}]},
            },
        },
    }
    apps.create_namespaced_deployment(NAMESPACE, body)


def _set_available(apps: client.AppsV1Api, status: str) -> str:
    read = apps.read_namespaced_deployment("metrics-collector", NAMESPACE).to_dict()
    body = {
        "metadata": {
            "name": "metrics-collector",
            "resourceVersion": read["metadata"]["resource_version"],
        },
        "spec": {
            "selector": {"matchLabels": LABELS},
            "template": {
                "metadata": {"labels": LABELS},
                "spec": {"containers": [{"name": "c", "image": "collector:1"}]},
            },
        },
        "status": {"conditions": [{"type": "Available", "status": status, "reason": "Checked"}]},
    }
    written = apps.replace_namespaced_deployment_status("metrics-collector", NAMESPACE, body)
    return str(written.metadata.resource_version)


def _seen(replica: Replica, resource: str, version: str) -> Callable[[], bool]:
    return lambda: int(replica.worker.objects_seen.get(resource) or 0) >= int(version)


def test_an_object_change_reaches_the_status_through_the_watch(
    server: APIServer, api: client.ApiClient, replica: Replica
) -> None:
    apps = client.AppsV1Api(api)
    eventually(lambda: _health(server, "collector") == ("Unknown", "NotFound"), "NotFound")
    _create_deployment(apps)
    _set_available(apps, "True")
    eventually(lambda: _health(server, "collector") == ("True", "AvailableCondition"), "Healthy")
    _set_available(apps, "False")
    eventually(lambda: _health(server, "collector") == ("False", "AvailableCondition"), "False")
    conditions = {c["type"]: c for c in _status(server)["conditions"]}
    assert conditions["Degraded"]["status"] == "True"
    assert conditions["Degraded"]["reason"] == "ResourceUnhealthy"
    assert conditions["ResourcesHealthy"]["status"] == "False"
    # The collector's own machine is untouched by the rule.
    assert conditions["MetricsCollectorStatus"]["reason"] == "NoReportYet"
    with urllib.request.urlopen(f"{replica.metrics_url}/metrics", timeout=WAIT) as answer:
        metrics = answer.read().decode()
    assert 'addon_status_resource_health{health="Unhealthy",resource="collector"} 1.0' in metrics
    assert 'addon_status_resource_health{health="Healthy",resource="collector"} 0.0' in metrics
    assert (
        'addon_status_resource_evaluations_total{reason="AvailableCondition",resource="collector"}'
        in metrics
    )
    # Every reason the rule can give has its series from the start.
    assert (
        'addon_status_resource_evaluations_total{reason="NotFound",resource="certificate"} 0.0'
        in metrics
    )


def test_an_object_change_that_keeps_the_result_writes_nothing(
    server: APIServer, api: client.ApiClient, replica: Replica
) -> None:
    apps = client.AppsV1Api(api)
    _create_deployment(apps)
    _set_available(apps, "True")
    eventually(lambda: _health(server, "collector") == ("True", "AvailableCondition"), "Healthy")
    replica.worker.tick().result(timeout=WAIT)
    writes = _status_writes(server)
    patched = apps.patch_namespaced_deployment(
        "metrics-collector", NAMESPACE, {"metadata": {"labels": {"touched": "yes"}}}
    )
    eventually(_seen(replica, "collector", patched.metadata.resource_version), "the change")
    replica.worker.tick().result(timeout=WAIT)
    assert _status_writes(server) == writes


def test_a_deleted_object_is_not_found(
    server: APIServer, api: client.ApiClient, replica: Replica
) -> None:
    apps = client.AppsV1Api(api)
    _create_deployment(apps)
    _set_available(apps, "True")
    eventually(lambda: _health(server, "collector") == ("True", "AvailableCondition"), "Healthy")
    apps.delete_namespaced_deployment("metrics-collector", NAMESPACE)
    eventually(lambda: _health(server, "collector") == ("Unknown", "NotFound"), "NotFound")


def test_a_watch_whose_history_is_gone_lists_again(
    server: APIServer, api: client.ApiClient, replica: Replica
) -> None:
    apps = client.AppsV1Api(api)
    _create_deployment(apps)
    _set_available(apps, "True")
    eventually(lambda: _health(server, "collector") == ("True", "AvailableCondition"), "Healthy")
    server.compact()
    server.drop_watches()  # the resumed watch starts from a version the server forgot: 410
    _set_available(apps, "False")
    eventually(lambda: _health(server, "collector") == ("False", "AvailableCondition"), "False")


def test_a_kind_the_server_does_not_serve_stays_unknown_without_a_crash(
    server: APIServer, replica: Replica
) -> None:
    eventually(lambda: _health(server, "certificate") == ("Unknown", "NotFound"), "NotFound")
    replica.worker.tick().result(timeout=WAIT)
    assert replica.worker.alive
    assert [w.name for w in replica.object_watches] == ["object-collector", "object-certificate"]
    assert all(w.alive for w in replica.object_watches)
