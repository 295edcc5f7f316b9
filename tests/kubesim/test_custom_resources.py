"""Custom resources through CustomObjectsApi: what kube-apiserver answers for create, read,
replace, patch and delete of the project's ObservabilityAddon, and how it treats spec, status,
generation, resourceVersion and the CRD's schema."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer
from tests.kubesim.conftest import (
    GROUP,
    NAME,
    PLURAL,
    VERSION,
    addon,
    forwarding_condition,
    patch_forwarding_status,
    status_of,
)

pytestmark = pytest.mark.integration
Custom = client.CustomObjectsApi


def _get(custom: Custom, namespace: str, name: str = NAME) -> dict[str, Any]:
    obj: dict[str, Any] = custom.get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name
    )
    return obj


def test_create_answers_201_with_server_owned_metadata_and_drops_status(
    custom: Custom, namespace: str
) -> None:
    body = addon(status={"conditions": [forwarding_condition()]})
    data, code, _ = custom.create_namespaced_custom_object_with_http_info(
        GROUP, VERSION, namespace, PLURAL, body
    )
    assert code == 201
    meta = data["metadata"]
    assert meta["generation"] == 1 and meta["namespace"] == namespace
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert isinstance(meta["resourceVersion"], str) and meta["resourceVersion"].isdigit()
    assert "status" not in data  # the status subresource owns status


def test_create_of_an_existing_name_is_409_already_exists(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (409, "AlreadyExists")
    assert status["message"] == f'{PLURAL}.{GROUP} "{NAME}" already exists'
    assert status["details"] == {"name": NAME, "group": GROUP, "kind": PLURAL}


def test_create_in_a_namespace_that_does_not_exist_is_404(custom: Custom) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, VERSION, "nowhere", PLURAL, addon())
    status = status_of(caught.value)
    assert (status["reason"], status["message"]) == ("NotFound", 'namespaces "nowhere" not found')


def test_create_with_a_resource_version_is_refused(custom: Custom, namespace: str) -> None:
    body = addon()
    body["metadata"]["resourceVersion"] = "12"
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    assert caught.value.status == 500
    assert status_of(caught.value)["message"] == (
        "resourceVersion should not be set on objects to be created"
    )


def test_an_invalid_name_is_422_naming_metadata_name(custom: Custom, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, addon("Not_A_DNS_Name")
        )
    status = status_of(caught.value)
    assert status["reason"] == "Invalid"
    assert [c["field"] for c in status["details"]["causes"]] == ["metadata.name"]


def test_get_and_list_per_namespace_and_across_namespaces(
    custom: Custom, core: client.CoreV1Api, created: dict[str, Any], namespace: str
) -> None:
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="other")))
    custom.create_namespaced_custom_object(GROUP, VERSION, "other", PLURAL, addon())
    assert _get(custom, namespace)["metadata"]["uid"] == created["metadata"]["uid"]
    mine = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    everywhere = custom.list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert mine["kind"] == "ObservabilityAddonList"
    assert [o["metadata"]["namespace"] for o in mine["items"]] == [namespace]
    assert sorted(o["metadata"]["namespace"] for o in everywhere["items"]) == sorted(
        [namespace, "other"]
    )
    assert int(everywhere["metadata"]["resourceVersion"]) >= max(
        int(o["metadata"]["resourceVersion"]) for o in everywhere["items"]
    )


def test_get_of_a_missing_object_is_404_not_found(custom: Custom, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        _get(custom, namespace, "missing")
    status = status_of(caught.value)
    assert status["message"] == f'{PLURAL}.{GROUP} "missing" not found'
    assert status["details"]["kind"] == PLURAL


def test_replace_with_a_stale_resource_version_is_409_conflict(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    fresh = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"spec": {"enableMetrics": False}}
    )
    assert fresh["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
    stale = {**created, "spec": {"enableMetrics": True, "interval": 30}}
    with pytest.raises(client.ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME, stale)
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (409, "Conflict")
    assert status["message"].startswith(
        f'Operation cannot be fulfilled on {PLURAL}.{GROUP} "{NAME}": the object has been modified'
    )


def test_replace_of_a_custom_resource_requires_a_resource_version(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    body = {
        **created,
        "metadata": {k: v for k, v in created["metadata"].items() if k != "resourceVersion"},
    }
    with pytest.raises(client.ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME, body)
    status = status_of(caught.value)
    assert status["code"] == 422
    assert status["message"].endswith(
        "metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    )


def test_replace_of_a_missing_object_is_404(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    body = {**created, "metadata": {**created["metadata"], "name": "missing"}}
    with pytest.raises(client.ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "missing", body)
    assert caught.value.status == 404


def test_only_a_spec_change_bumps_generation(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    labelled = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"metadata": {"labels": {"team": "obs"}}}
    )
    assert labelled["metadata"]["generation"] == 1
    with_status = patch_forwarding_status(custom, namespace)
    assert with_status["metadata"]["generation"] == 1
    changed = custom.replace_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {**with_status, "spec": {"enableMetrics": False}}
    )
    assert changed["metadata"]["generation"] == 2
    assert changed["status"] == with_status["status"]


def test_a_status_write_changes_only_status(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    attempt = {
        **created,
        "spec": {"enableMetrics": False},
        "metadata": {**created["metadata"], "labels": {"sneaky": "yes"}},
        "status": {"conditions": [forwarding_condition()]},
    }
    written = custom.replace_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, NAME, attempt
    )
    assert written["spec"] == created["spec"]
    assert "labels" not in written["metadata"]
    assert written["status"]["conditions"][0]["reason"] == "ForwardSuccessful"
    assert written["metadata"]["generation"] == 1


def test_a_main_resource_write_ignores_status(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    patch_forwarding_status(custom, namespace)
    after = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"status": {"conditions": None}}
    )
    assert after["status"]["conditions"][0]["type"] == "Available"


def test_a_write_that_changes_nothing_keeps_the_resource_version(
    server: APIServer, custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    status = {"status": {"conditions": [forwarding_condition()]}}
    first = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, NAME, status
    )
    before = server.resource_version
    again = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, NAME, status
    )
    same = custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME, again)
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert same["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert server.resource_version == before


def test_an_invalid_condition_reason_is_422_naming_the_field(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    bad = {"status": {"conditions": [forwarding_condition(reason="not a reason")]}}
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, NAME, bad)
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (422, "Invalid")
    assert status["details"]["kind"] == "ObservabilityAddon"
    [cause] = status["details"]["causes"]
    assert cause["field"] == "status.conditions[0].reason"
    assert cause["reason"] == "FieldValueInvalid"
    assert "should match '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$'" in cause["message"]
    assert status["message"].startswith(
        f'ObservabilityAddon.{GROUP} "{NAME}" is invalid: status.conditions[0].reason: '
        'Invalid value: "not a reason"'
    )


def test_a_message_over_32768_characters_is_422_too_long(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    fits = {"status": {"conditions": [forwarding_condition(message="x" * 32768)]}}
    custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, NAME, fits)
    too_long = {"status": {"conditions": [forwarding_condition(message="x" * 32769)]}}
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object_status(
            GROUP, VERSION, namespace, PLURAL, NAME, too_long
        )
    [cause] = status_of(caught.value)["details"]["causes"]
    assert cause == {
        "reason": "FieldValueTooLong",
        "field": "status.conditions[0].message",
        "message": "Too long: may not be more than 32768 bytes",
    }


def test_schema_violations_each_name_their_field(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    bad = forwarding_condition(
        type_="Degraded",
        status="Maybe",
        lastTransitionTime="2026-01-01T00:00:00",
        observedGeneration=-1,
    )
    del bad["message"]
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            NAME,
            {"status": {"conditions": [bad, forwarding_condition(), forwarding_condition()]}},
        )
    causes = {c["field"]: c["reason"] for c in status_of(caught.value)["details"]["causes"]}
    assert causes == {
        "status.conditions[0].message": "FieldValueRequired",
        "status.conditions[0].status": "FieldValueNotSupported",
        "status.conditions[0].lastTransitionTime": "FieldValueTypeInvalid",
        "status.conditions[0].observedGeneration": "FieldValueInvalid",
        "status.conditions[2]": "FieldValueDuplicate",
    }


def test_unknown_fields_are_pruned_silently_unless_preserved(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    written = custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        NAME,
        {"status": {"conditions": [forwarding_condition(extra="dropped")], "unknownField": 1}},
    )
    assert written["status"] == {"conditions": [forwarding_condition()]}
    spec = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"spec": {"anything": {"goes": True}}}
    )
    assert spec["spec"]["anything"] == {"goes": True}  # x-kubernetes-preserve-unknown-fields


def test_strict_field_validation_rejects_unknown_fields(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object_status(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            NAME,
            {"status": {"unknownField": 1}},
            field_validation="Strict",
        )
    assert caught.value.status == 400
    assert 'unknown field "status.unknownField"' in status_of(caught.value)["message"]


def test_strategic_merge_patch_is_415_for_custom_resources(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            NAME,
            {"spec": {"enableMetrics": False}},
            _content_type="application/strategic-merge-patch+json",
        )
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (415, "UnsupportedMediaType")
    assert "application/merge-patch+json" in status["message"]


def test_json_patch_applies_operations_and_a_failed_test_is_422(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    patched = custom.patch_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        NAME,
        [
            {"op": "test", "path": "/spec/enableMetrics", "value": True},
            {"op": "replace", "path": "/spec/enableMetrics", "value": False},
        ],
        _content_type="application/json-patch+json",
    )
    assert patched["spec"]["enableMetrics"] is False
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            NAME,
            [{"op": "test", "path": "/spec/enableMetrics", "value": True}],
            _content_type="application/json-patch+json",
        )
    assert caught.value.status == 422


def test_a_patch_carrying_a_stale_resource_version_is_409(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"spec": {"enableMetrics": False}}
    )
    stale = {
        "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
        "status": {"conditions": [forwarding_condition()]},
    }
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, NAME, stale)
    assert status_of(caught.value)["reason"] == "Conflict"


def test_delete_removes_the_object_and_finalizers_hold_it(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"metadata": {"finalizers": ["example.com/keep"]}}
    )
    held = custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    assert held["metadata"]["deletionTimestamp"]
    assert _get(custom, namespace)["metadata"]["deletionTimestamp"]
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME, {"metadata": {"finalizers": None}}
    )
    with pytest.raises(client.ApiException) as caught:
        _get(custom, namespace)
    assert caught.value.status == 404


def test_delete_answers_a_success_status(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    answer = custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    assert answer["kind"] == "Status" and answer["status"] == "Success"
    assert answer["details"] == {
        "name": NAME,
        "group": GROUP,
        "kind": PLURAL,
        "uid": created["metadata"]["uid"],
    }
    with pytest.raises(client.ApiException) as caught:
        custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    assert caught.value.status == 404
