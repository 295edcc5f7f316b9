"""One fresh API server per test on 127.0.0.1:0, reached by the real `kubernetes` client over
HTTP, and builders for the project's ObservabilityAddon and its conditions."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer
from tests.support import api_client, condition

CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
GROUP = "observability.open-cluster-management.io"
VERSION = "v1beta1"
PLURAL = "observabilityaddons"
NAMESPACE = "open-cluster-management-addon-observability"
NAME = "observability-addon"
T0 = "2026-01-01T00:00:00Z"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], watch_history=50) as srv:
        yield srv


@pytest.fixture
def api(server: APIServer) -> Iterator[client.ApiClient]:
    with api_client(server) as c:
        yield c


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def namespace(core: client.CoreV1Api) -> str:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    return NAMESPACE


def addon(name: str = NAME, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ObservabilityAddon",
        "metadata": {"name": name},
        "spec": {"enableMetrics": True},
    }
    body.update(fields)
    return body


def forwarding_condition(type_: str = "Available", **changes: Any) -> dict[str, Any]:
    """A valid condition of an addon that forwards, with `changes`."""
    fields: dict[str, Any] = {
        "status": "True",
        "reason": "ForwardSuccessful",
        "message": "metrics are forwarded",
        "at": T0,
        **changes,
    }
    return condition(type_, **fields)


def status_of(error: client.ApiException) -> dict[str, Any]:
    """The `Status` object kube-apiserver put in the error's body."""
    body: dict[str, Any] = json.loads(error.body)
    assert body["kind"] == "Status" and body["apiVersion"] == "v1"
    assert body["status"] == "Failure" and body["code"] == error.status
    return body


@pytest.fixture
def created(custom: client.CustomObjectsApi, namespace: str) -> dict[str, Any]:
    obj: dict[str, Any] = custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, addon()
    )
    return obj


def patch_forwarding_status(api: client.CustomObjectsApi, namespace: str) -> dict[str, Any]:
    """The addon's status patched to one `forwarding_condition`, through the real client."""
    obj: dict[str, Any] = api.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        NAME,
        {"status": {"conditions": [forwarding_condition()]}},
    )
    return obj
