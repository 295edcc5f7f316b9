"""core/v1 ConfigMaps as kube-apiserver serves them (`pkg/apis/core/validation`:
`ValidateConfigMap`, `ValidateConfigMapUpdate`), through the typed client: create, read,
replace with optimistic concurrency, keys and size checked, immutability kept, owner
references stored."""

from __future__ import annotations

import pytest
from kubernetes import client

from tests.kubesim.conftest import status_of

pytestmark = pytest.mark.integration
NAME = "observability-addon-status"


def _config_map(**data: str) -> client.V1ConfigMap:
    return client.V1ConfigMap(metadata=client.V1ObjectMeta(name=NAME), data=data)


def test_a_config_map_is_created_read_and_replaced_with_its_resource_version(
    core: client.CoreV1Api, namespace: str
) -> None:
    created = core.create_namespaced_config_map(namespace, _config_map(state="{}"))
    assert created.data == {"state": "{}"} and created.metadata.resource_version
    created.data = {"state": '{"a": 1}'}
    replaced = core.replace_namespaced_config_map(NAME, namespace, created)
    assert core.read_namespaced_config_map(NAME, namespace).data == {"state": '{"a": 1}'}
    assert replaced.metadata.resource_version != created.metadata.resource_version


def test_replacing_a_config_map_from_a_stale_read_is_409_conflict(
    core: client.CoreV1Api, namespace: str
) -> None:
    stale = core.create_namespaced_config_map(namespace, _config_map(state="1"))
    fresh = core.read_namespaced_config_map(NAME, namespace)
    fresh.data = {"state": "2"}
    core.replace_namespaced_config_map(NAME, namespace, fresh)
    stale.data = {"state": "3"}
    with pytest.raises(client.ApiException) as error:
        core.replace_namespaced_config_map(NAME, namespace, stale)
    assert error.value.status == 409 and status_of(error.value)["reason"] == "Conflict"


def test_a_config_map_key_must_be_a_config_key(core: client.CoreV1Api, namespace: str) -> None:
    with pytest.raises(client.ApiException) as error:
        core.create_namespaced_config_map(namespace, _config_map(**{"a/b": "x"}))
    assert error.value.status == 422
    causes = status_of(error.value)["details"]["causes"]
    assert [c["field"] for c in causes] == ["data[a/b]"]
    assert "a valid config key must consist of alphanumeric characters" in causes[0]["message"]


def test_a_config_map_over_one_mebibyte_is_422_too_long(
    core: client.CoreV1Api, namespace: str
) -> None:
    with pytest.raises(client.ApiException) as error:
        core.create_namespaced_config_map(namespace, _config_map(state="x" * (1024 * 1024 + 1)))
    assert error.value.status == 422
    assert status_of(error.value)["details"]["causes"][0]["reason"] == "FieldValueTooLong"


def test_an_immutable_config_map_keeps_its_data(core: client.CoreV1Api, namespace: str) -> None:
    body = _config_map(state="1")
    body.immutable = True
    created = core.create_namespaced_config_map(namespace, body)
    created.data = {"state": "2"}
    with pytest.raises(client.ApiException) as error:
        core.replace_namespaced_config_map(NAME, namespace, created)
    assert error.value.status == 422
    assert [c["field"] for c in status_of(error.value)["details"]["causes"]] == ["data"]


def test_a_config_map_keeps_its_owner_reference(core: client.CoreV1Api, namespace: str) -> None:
    body = _config_map(state="{}")
    body.metadata.owner_references = [
        client.V1OwnerReference(
            api_version="observability.open-cluster-management.io/v1beta1",
            kind="ObservabilityAddon",
            name="observability-addon",
            uid="0b4f3c52-0000-4000-8000-000000000001",
            controller=True,
        )
    ]
    created = core.create_namespaced_config_map(namespace, body)
    (owner,) = created.metadata.owner_references
    assert (owner.kind, owner.uid, owner.controller) == (
        "ObservabilityAddon",
        "0b4f3c52-0000-4000-8000-000000000001",
        True,
    )
