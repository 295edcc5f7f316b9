"""Lists and the request edges around them: selectors (and the field labels kube-apiserver
refuses), pagination with continue tokens, delete-collection, namespace deletion, and what the
router answers for resources and methods it does not serve."""

from __future__ import annotations

import http.client
import json

import pytest
from kubernetes import client

from kubesim import APIServer
from tests.kubesim.conftest import GROUP, PLURAL, VERSION, addon, status_of

pytestmark = pytest.mark.integration
Custom = client.CustomObjectsApi


def _create(
    custom: Custom,
    namespace: str,
    *names: str,
    labels: dict[str, str] | None = None,
) -> None:
    for name in names:
        custom.create_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            addon(metadata={"name": name, "labels": labels or {}}),
        )


def _names(listing: dict[str, object]) -> list[str]:
    items = listing["items"]
    assert isinstance(items, list)
    return [item["metadata"]["name"] for item in items]


def test_label_selectors_filter_lists(custom: Custom, namespace: str) -> None:
    _create(custom, namespace, "a", labels={"tier": "hub"})
    _create(custom, namespace, "b", labels={"tier": "spoke"})
    _create(custom, namespace, "c")

    def names(selector: str) -> list[str]:
        return _names(
            custom.list_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, label_selector=selector
            )
        )

    assert names("tier=hub") == ["a"]
    assert names("tier!=hub") == ["b", "c"]
    assert names("tier in (hub,spoke)") == ["a", "b"]
    assert names("!tier") == ["c"]


def test_an_unsupported_field_label_is_400(custom: Custom, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, field_selector="spec.enableMetrics=true"
        )
    status = status_of(caught.value)
    assert (status["code"], status["message"]) == (
        400,
        "field label not supported: spec.enableMetrics",
    )


def test_pages_follow_continue_tokens_until_compaction(
    server: APIServer, custom: Custom, namespace: str
) -> None:
    _create(custom, namespace, "a", "b", "c")
    first = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, limit=2)
    assert _names(first) == ["a", "b"] and first["metadata"]["remainingItemCount"] == 1
    _create(custom, namespace, "d")  # after the snapshot: not in this list
    second = custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, limit=2, _continue=first["metadata"]["continue"]
    )
    assert _names(second) == ["c"] and second["metadata"]["continue"] == ""
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    server.compact()
    with pytest.raises(client.ApiException) as caught:
        custom.list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, limit=2, _continue=first["metadata"]["continue"]
        )
    assert status_of(caught.value)["reason"] == "Expired"


def test_resource_version_match_needs_a_resource_version(custom: Custom, namespace: str) -> None:
    with pytest.raises(client.ApiException) as caught:
        custom.list_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, resource_version_match="Exact"
        )
    assert caught.value.status == 422


def test_delete_collection_deletes_what_the_selector_matches(
    custom: Custom, namespace: str
) -> None:
    _create(custom, namespace, "a", "b", labels={"drop": "yes"})
    _create(custom, namespace, "c")
    deleted = custom.delete_collection_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, label_selector="drop=yes"
    )
    assert _names(deleted) == ["a", "b"]
    assert _names(custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)) == ["c"]


def test_deleting_a_namespace_deletes_its_objects(
    server: APIServer, custom: Custom, core: client.CoreV1Api, namespace: str
) -> None:
    _create(custom, namespace, "a")
    core.delete_namespace(namespace)
    assert server.get_object(GROUP, VERSION, PLURAL, namespace, "a") is None
    with pytest.raises(client.ApiException) as caught:
        core.read_namespace(namespace)
    assert caught.value.status == 404


def test_a_name_that_differs_from_the_url_is_400(custom: Custom, namespace: str) -> None:
    _create(custom, namespace, "a")
    current = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "a")
    with pytest.raises(client.ApiException) as caught:
        custom.replace_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "b", current)
    assert status_of(caught.value)["message"] == (
        "the name of the object (a) does not match the name on the URL (b)"
    )


def test_unserved_resources_are_404_and_unserved_methods_405(
    server: APIServer, custom: Custom
) -> None:
    with pytest.raises(client.ApiException) as missing:
        custom.list_cluster_custom_object(GROUP, VERSION, "nonexistents")
    assert status_of(missing.value)["message"] == (
        "the server could not find the requested resource"
    )
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request("GET", "/apis/authentication.k8s.io/v1/tokenreviews")
    answer = connection.getresponse()
    assert (answer.status, json.loads(answer.read())["reason"]) == (405, "MethodNotAllowed")
    connection.close()
