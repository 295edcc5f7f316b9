"""The seam's contract, checked on both of its sides: `FakeKube` (what unit tests use) must
answer as `RestKube` against kubesim (the project's client over HTTP against a server that
answers as kube-apiserver) does. Each test names the API server behaviour it relies on:
404 for a missing object, 409 for a create of an existing name and for a stale
resourceVersion, a status PUT that leaves the spec and a PUT of the object that leaves the
status, `metadata.generation` moving with the spec only, a watch from a list's
resourceVersion, a list and a watch across every namespace, 410 Gone for a compacted one, and
TokenReview."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller.kube.api import (
    ADDON,
    ALL_NAMESPACES,
    ConflictError,
    GoneError,
    KindNotServedError,
    Kube,
    NotFoundError,
    WatchEvent,
    resource_version,
    whole,
)
from controller.kube.api import NAMESPACE as NAMESPACE_RESOURCE
from controller.kube.fake import FakeKube
from controller.kube.rest import RestKube
from kubesim import APIServer, UserInfo
from tests.support import api_client, connection

CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
NAMESPACE = "open-cluster-management-addon-observability"
NAME = "observability-addon"
ADMIN = "admin-token"
USER = {"username": "admin", "groups": ["system:masters", "system:authenticated"]}


@pytest.fixture(params=["fake", "kubesim"])
def kube(request: pytest.FixtureRequest) -> Iterator[Kube]:
    if request.param == "fake":
        yield FakeKube(tokens={ADMIN: USER})
        return
    tokens = {ADMIN: UserInfo("admin", groups=("system:masters",))}
    with (
        APIServer([CRD], tokens=tokens, watch_history=3) as server,
        api_client(server, ADMIN) as api,
    ):
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        yield RestKube(connection(server, ADMIN), request_timeout=5.0)


def addon(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": ADDON.api_version,
        "kind": ADDON.kind,
        "metadata": {"name": NAME, "namespace": NAMESPACE},
        "spec": spec,
    }


def first_event(kube: Kube, version: str) -> WatchEvent:
    stream = kube.watch(
        ADDON,
        NAMESPACE,
        resource_version=version,
        timeout_seconds=2,
        field_selector=f"metadata.name={NAME}",
    )
    try:
        return next(e for e in stream if e.type != "BOOKMARK")
    finally:
        stream.close()


def test_a_missing_object_is_not_found(kube: Kube) -> None:
    with pytest.raises(NotFoundError):
        kube.get(ADDON, NAMESPACE, NAME)


def test_a_second_create_of_one_name_conflicts(kube: Kube) -> None:
    created = kube.create(ADDON, NAMESPACE, addon())
    assert created["metadata"]["generation"] == 1 and resource_version(created)
    with pytest.raises(ConflictError):
        kube.create(ADDON, NAMESPACE, addon())


def test_a_status_write_with_a_stale_resource_version_conflicts(kube: Kube) -> None:
    read = kube.create(ADDON, NAMESPACE, addon(retention="7d"))
    body = {**read, "spec": {"ignored": True}, "status": {"conditions": []}}
    stored = kube.replace_status(ADDON, NAMESPACE, NAME, body)
    assert stored["status"] == {"conditions": []}
    assert stored["spec"] == {"retention": "7d"}  # a status PUT leaves the spec
    assert stored["metadata"]["generation"] == 1
    with pytest.raises(ConflictError):
        kube.replace_status(ADDON, NAMESPACE, NAME, {**read, "status": {}})


def test_the_generation_moves_with_the_spec_and_a_put_keeps_the_status(kube: Kube) -> None:
    read = kube.create(ADDON, NAMESPACE, addon())
    read = kube.replace_status(ADDON, NAMESPACE, NAME, {**read, "status": {"conditions": []}})
    stored = kube.replace(
        ADDON, NAMESPACE, NAME, {**read, "spec": {"retention": "1d"}, "status": {}}
    )
    assert stored["metadata"]["generation"] == 2
    assert stored["status"] == {"conditions": []}


def test_a_watch_from_the_lists_version_sees_the_next_change(kube: Kube) -> None:
    kube.create(ADDON, NAMESPACE, addon())
    listed = kube.list(ADDON, NAMESPACE, keep=whole, field_selector=f"metadata.name={NAME}")
    [item] = listed.items
    changed = kube.replace_status(ADDON, NAMESPACE, NAME, {**item, "status": {"conditions": []}})
    event = first_event(kube, listed.resource_version)
    assert event.type == "MODIFIED"
    assert resource_version(event.object) == resource_version(changed)


def test_a_list_and_a_watch_span_every_namespace(kube: Kube) -> None:
    # kube-apiserver: /apis/GROUP/VERSION/PLURAL, without /namespaces/NS, lists and watches
    # the resource in every namespace (client-go's metav1.NamespaceAll is "").
    elsewhere = {**addon(), "metadata": {"name": NAME, "namespace": "default"}}
    kube.create(ADDON, NAMESPACE, addon())
    created = kube.create(ADDON, "default", elsewhere)
    listed = kube.list(ADDON, ALL_NAMESPACES, keep=whole)
    assert sorted(i["metadata"]["namespace"] for i in listed.items) == ["default", NAMESPACE]
    changed = kube.replace(ADDON, "default", NAME, {**created, "spec": {"n": 1}})
    stream = kube.watch(ADDON, ALL_NAMESPACES, resource_version=listed.resource_version,
                        timeout_seconds=2)  # fmt: skip
    try:
        event = next(e for e in stream if e.type != "BOOKMARK")
    finally:
        stream.close()
    assert (event.type, event.object["metadata"]["namespace"]) == ("MODIFIED", "default")
    assert resource_version(event.object) == resource_version(changed)


def test_a_watch_from_a_compacted_version_is_gone(kube: Kube) -> None:
    obj = kube.create(ADDON, NAMESPACE, addon())
    start = resource_version(obj)
    for index in range(5):
        obj = kube.replace(ADDON, NAMESPACE, NAME, {**obj, "spec": {"n": index}})
    if isinstance(kube, FakeKube):
        kube.compact()  # kubesim keeps the last 3 versions only
    with pytest.raises(GoneError):
        first_event(kube, start)


def test_token_review_says_who_a_token_belongs_to(kube: Kube) -> None:
    known = kube.review_token(ADMIN, [])
    assert known["authenticated"] is True
    assert known["user"]["username"] == "admin"
    assert not kube.review_token("forged", []).get("authenticated")


@pytest.mark.parametrize(
    ("api_version", "kind", "plural", "namespaced"),
    [
        pytest.param(ADDON.api_version, "ObservabilityAddon", "observabilityaddons", True,
                     id="a-crd"),
        pytest.param("apps/v1", "Deployment", "deployments", True, id="a-group"),
        pytest.param("v1", "Namespace", "namespaces", False, id="cluster-scoped-core"),
    ],
)  # fmt: skip
def test_discovery_names_the_resource_of_a_kind(
    kube: Kube, api_version: str, kind: str, plural: str, namespaced: bool
) -> None:
    """kube-apiserver's discovery (`/api/v1`, `/apis/<group>/<version>`) lists each resource
    with its kind and whether it is namespaced; subresources (`deployments/status`) are not
    the kind's resource."""
    found = kube.discover(api_version, kind)
    assert (found.api_version, found.plural, found.kind) == (api_version, plural, kind)
    assert found.namespaced is namespaced


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [("example.com/v1", "Widget"), ("apps/v1", "Widget"), ("v1", "Widget")],
    ids=["unknown-group", "unknown-kind-of-a-group", "unknown-core-kind"],
)
def test_a_kind_the_server_does_not_serve_is_not_served(
    kube: Kube, api_version: str, kind: str
) -> None:
    """An unknown group version is a 404 from discovery; a known one without the kind lists
    no such resource: both say the kind is not served (yet)."""
    with pytest.raises(KindNotServedError):
        kube.discover(api_version, kind)


def test_a_cluster_scoped_resource_is_listed_without_a_namespace(kube: Kube) -> None:
    """`/api/v1/namespaces`: the path of a cluster-scoped resource names no namespace."""
    if isinstance(kube, FakeKube):  # kubesim's fixture created it through the API
        kube.put(NAMESPACE_RESOURCE, {"metadata": {"name": NAMESPACE, "namespace": ""}})
    listed = kube.list(NAMESPACE_RESOURCE, ALL_NAMESPACES, keep=whole).items
    assert NAMESPACE in {item["metadata"]["name"] for item in listed}
