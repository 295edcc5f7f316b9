"""What the spoke hands its worker from its informers (`controller.spoke.watches`), on the
in-memory `Kube` (the informer itself is tested in tests/kube/test_informer.py): the CR as
listed (`ADDED`), then each change; a missing CR as one `DELETED` and its creation as `ADDED`; a
watched object as (resource, object, resourceVersion), None once deleted, its kind found by
discovery."""

from __future__ import annotations

import queue
from typing import Any

from controller.kube.api import WatchEvent
from controller.kube.backoff import Backoff
from controller.spoke.watches import addon_watch, object_watches
from statemachines.health import load_resources
from tests.spoke.fakes import NAMESPACE, FakeAddonStore, addon_object
from tests.spoke.support import WAIT

FAST = Backoff(initial=0.01, maximum=0.05)


def test_the_cr_is_listed_then_followed(store: FakeAddonStore) -> None:
    events: queue.Queue[WatchEvent] = queue.Queue()
    watch = addon_watch(store.fake, store.ref, events.put, backoff=FAST)
    watch.start()
    try:
        first = events.get(timeout=WAIT)
        assert (first.type, first.object["metadata"]["name"]) == ("ADDED", store.ref.name)
        store.change_spec({"a": 1})
        assert events.get(timeout=WAIT).type == "MODIFIED"
    finally:
        watch.stop(WAIT)


def test_a_missing_cr_is_told_once_and_its_creation_seen() -> None:
    store = FakeAddonStore(obj=None)
    events: queue.Queue[WatchEvent] = queue.Queue()
    watch = addon_watch(store.fake, store.ref, events.put, backoff=FAST)
    watch.start()
    try:
        assert events.get(timeout=WAIT).type == "DELETED"
        store.create(addon_object())
        assert events.get(timeout=WAIT).type == "ADDED"
        assert events.empty()
    finally:
        watch.stop(WAIT)


def test_a_watched_object_is_handed_over_with_its_version_and_none_once_deleted(
    store: FakeAddonStore,
) -> None:
    resources = load_resources(
        [{"name": "collector", "object": {"apiVersion": "apps/v1", "kind": "Deployment",
                                           "name": "mc"}, "healthRule": {"alwaysHealthy": {}}}],
        namespace=NAMESPACE, collectors=["metrics-collector"],
    )  # fmt: skip
    seen: queue.Queue[tuple[str, dict[str, Any] | None, str]] = queue.Queue()
    [watch] = object_watches(store.fake, resources, lambda *args: seen.put(args), backoff=FAST)
    assert watch.name == "object-collector"
    watch.start()
    try:
        assert seen.get(timeout=WAIT)[:2] == ("collector", None)  # not there yet
        deployments = store.fake.discover("apps/v1", "Deployment")
        stored = store.fake.put(deployments, {"metadata": {"name": "mc", "namespace": NAMESPACE}})
        resource, obj, version = seen.get(timeout=WAIT)
        assert (resource, version) == ("collector", stored["metadata"]["resourceVersion"])
        assert obj is not None and obj["metadata"]["name"] == "mc"
        store.fake.delete(deployments, NAMESPACE, "mc")
        assert seen.get(timeout=WAIT)[1] is None
    finally:
        watch.stop(WAIT)
