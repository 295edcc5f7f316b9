"""The seam across namespaces: `namespace` "" is every namespace (the hub side's one list and
watch of the hub copies) or a cluster-scoped resource, with kube-apiserver's URL paths; the
fake answers the same way, and takes a `key=value` label selector."""

from __future__ import annotations

from controller.kube.api import ADDON, NAMESPACE, whole
from controller.kube.fake import FakeKube


def test_an_empty_namespace_is_the_path_of_every_namespace() -> None:
    root = "/apis/observability.open-cluster-management.io/v1beta1"
    assert ADDON.path("") == f"{root}/observabilityaddons"
    assert ADDON.path("c1", "a", "status") == f"{root}/namespaces/c1/observabilityaddons/a/status"
    assert NAMESPACE.path("") == "/api/v1/namespaces"


def _addon(namespace: str) -> dict[str, object]:
    return {"metadata": {"name": "observability-addon", "namespace": namespace}}


def test_the_fake_lists_and_watches_every_namespace() -> None:
    kube = FakeKube()
    kube.put(ADDON, _addon("c1"))
    listed = kube.list(ADDON, "", keep=whole, field_selector="metadata.name=observability-addon")
    assert [i["metadata"]["namespace"] for i in listed.items] == ["c1"]
    stream = kube.watch(ADDON, "", resource_version=listed.resource_version, timeout_seconds=1)
    kube.put(ADDON, _addon("c2"))
    event = next(iter(stream))
    stream.close()
    assert (event.type, event.object["metadata"]["namespace"]) == ("ADDED", "c2")


def test_the_fake_lists_by_label_selector() -> None:
    kube = FakeKube()
    kube.put(NAMESPACE, {"metadata": {"name": "a", "namespace": "", "labels": {"env": "prod"}}})
    kube.put(NAMESPACE, {"metadata": {"name": "b", "namespace": ""}})
    listed = kube.list(NAMESPACE, "", keep=whole, label_selector="env=prod")
    assert [i["metadata"]["name"] for i in listed.items] == ["a"]
