"""Watches through `kubernetes.watch.Watch().stream`: replay after a resourceVersion, resume,
410 Gone once the history is compacted or evicted (and how the client surfaces it), dropped
connections, server stop, selectors and bookmarks; and the wire format itself."""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import urllib3
from kubernetes import client, watch

from kubesim import APIServer
from tests.kubesim.conftest import (
    CRD,
    GROUP,
    NAME,
    NAMESPACE,
    PLURAL,
    VERSION,
    addon,
    forwarding_condition,
    patch_forwarding_status,
)
from tests.support import api_client

pytestmark = pytest.mark.integration
Custom = client.CustomObjectsApi
Event = dict[str, Any]


def stream(custom: Custom, namespace: str, **kwargs: Any) -> tuple[watch.Watch, Iterator[Event]]:
    kwargs.setdefault("timeout_seconds", 5)
    watcher = watch.Watch()
    return watcher, watcher.stream(
        custom.list_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, **kwargs
    )


def take(custom: Custom, namespace: str, count: int, **kwargs: Any) -> list[Event]:
    """The first `count` events, then the watch is stopped (no waiting for its timeout)."""
    watcher, events = stream(custom, namespace, **kwargs)
    seen: list[Event] = []
    for event in events:
        seen.append(event)
        if len(seen) == count:
            watcher.stop()
    return seen


def summary(events: list[Event]) -> list[tuple[str, str, Any]]:
    return [
        (
            e["type"],
            e["raw_object"]["metadata"].get("name", ""),
            e["raw_object"]["metadata"].get("generation"),
        )
        for e in events
    ]


def later(seconds: float, action: Callable[[], object]) -> threading.Thread:
    thread = threading.Thread(target=lambda: (time.sleep(seconds), action()), daemon=True)
    thread.start()
    return thread


def bump(custom: Custom, namespace: str, value: int, name: str = NAME) -> dict[str, Any]:
    obj: dict[str, Any] = custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, name, {"spec": {"interval": value}}
    )
    return obj


def test_watch_replays_the_changes_after_a_resource_version(custom: Custom, namespace: str) -> None:
    start = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    bump(custom, namespace, 1)
    custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    events = take(custom, namespace, 3, resource_version=start["metadata"]["resourceVersion"])
    assert summary(events) == [("ADDED", NAME, 1), ("MODIFIED", NAME, 2), ("DELETED", NAME, 2)]
    versions = [int(e["raw_object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_watch_without_resource_version_starts_with_the_current_objects(
    custom: Custom, namespace: str
) -> None:
    for name in ("a", "b"):
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon(name))
    later(0.2, lambda: bump(custom, namespace, 7, "a"))
    assert summary(take(custom, namespace, 3)) == [
        ("ADDED", "a", 1),
        ("ADDED", "b", 1),
        ("MODIFIED", "a", 2),
    ]


def test_a_watch_ends_cleanly_on_timeout_seconds(custom: Custom, namespace: str) -> None:
    began = time.monotonic()
    _, events = stream(custom, namespace, timeout_seconds=1)
    assert list(events) == []
    assert time.monotonic() - began >= 0.9  # ended by the server's timeout, not at once


def test_resuming_from_the_last_seen_version_gets_only_newer_changes(
    custom: Custom, namespace: str
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    seen = bump(custom, namespace, 1)
    bump(custom, namespace, 2)
    events = take(custom, namespace, 1, resource_version=seen["metadata"]["resourceVersion"])
    assert [e["raw_object"]["spec"]["interval"] for e in events] == [2]


def test_after_compaction_the_client_surfaces_410_as_an_api_exception(
    server: APIServer, custom: Custom, namespace: str
) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    bump(custom, namespace, 1)
    server.compact()
    with pytest.raises(client.ApiException) as caught:
        take(custom, namespace, 1, resource_version=created["metadata"]["resourceVersion"])
    assert caught.value.status == 410
    assert caught.value.reason.startswith("Expired: too old resource version: ")
    # without timeout_seconds the client retries once from the same version, then raises too
    with pytest.raises(client.ApiException) as again:
        take(
            custom,
            namespace,
            1,
            resource_version=created["metadata"]["resourceVersion"],
            timeout_seconds=None,
        )
    assert again.value.status == 410
    # a fresh list gives a version to watch from again
    current = custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    later(0.2, lambda: bump(custom, namespace, 2))
    events = take(custom, namespace, 1, resource_version=current["metadata"]["resourceVersion"])
    assert summary(events) == [("MODIFIED", NAME, 3)]


def test_the_410_is_an_error_event_on_an_open_stream(server: APIServer, namespace: str) -> None:
    server.compact()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    connection.request(
        "GET", f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}?watch=1&resourceVersion=1"
    )
    response = connection.getresponse()
    assert response.status == 200
    assert response.getheader("Transfer-Encoding") == "chunked"
    event = json.loads(response.readline())
    assert event["type"] == "ERROR"
    assert event["object"] == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": f"too old resource version: 1 ({server.resource_version})",
        "reason": "Expired",
        "code": 410,
    }
    connection.close()


def test_history_beyond_watch_history_is_forgotten(custom: Custom, namespace: str) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    for value in range(51):  # the fixture keeps 50 events: the first bump is evicted
        bump(custom, namespace, value)
    with pytest.raises(client.ApiException) as caught:
        take(custom, namespace, 1, resource_version=created["metadata"]["resourceVersion"])
    assert caught.value.status == 410
    with pytest.raises(client.ApiException) as listing:
        custom.list_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            PLURAL,
            resource_version=created["metadata"]["resourceVersion"],
            resource_version_match="Exact",
        )
    assert listing.value.status == 410


def test_a_list_at_an_exact_retained_version_shows_that_past(
    custom: Custom, namespace: str
) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    bump(custom, namespace, 5)
    past = custom.list_namespaced_custom_object(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        resource_version=created["metadata"]["resourceVersion"],
        resource_version_match="Exact",
    )
    assert past["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert [o["spec"] for o in past["items"]] == [created["spec"]]


def test_a_dropped_watch_breaks_the_clients_stream(
    server: APIServer, custom: Custom, namespace: str
) -> None:
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    later(0.3, server.drop_watches)
    _, events = stream(custom, namespace)
    with pytest.raises(urllib3.exceptions.ProtocolError):
        for _ in events:
            pass


def test_stopping_the_server_ends_watches_cleanly_and_keeps_data(
    server: APIServer, namespace: str
) -> None:
    with api_client(server) as api:
        custom = client.CustomObjectsApi(api)
        created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
        later(0.3, server.stop)
        _, events = stream(custom, namespace)
        assert summary(list(events)) == [("ADDED", NAME, 1)]
    server.start()
    with api_client(server) as api:
        again = client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, NAME
        )
    assert again["metadata"]["uid"] == created["metadata"]["uid"]


def test_a_field_selector_on_the_name_filters_the_stream(custom: Custom, namespace: str) -> None:
    for name in ("a", "b"):
        custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon(name))
    later(0.2, lambda: (bump(custom, namespace, 1, "a"), bump(custom, namespace, 1, "b")))
    events = take(custom, namespace, 2, field_selector="metadata.name=b")
    assert summary(events) == [("ADDED", "b", 1), ("MODIFIED", "b", 2)]


def test_an_object_leaving_a_label_selector_is_deleted_from_the_watch(
    custom: Custom, namespace: str
) -> None:
    custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, addon(metadata={"name": NAME, "labels": {"a": "1"}})
    )
    later(
        0.2,
        lambda: custom.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, NAME, {"metadata": {"labels": {"a": "2"}}}
        ),
    )
    events = take(custom, namespace, 2, label_selector="a=1")
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


def test_bookmarks_carry_a_resource_version_to_resume_from() -> None:
    with APIServer([CRD], bookmark_interval=0.2) as server, api_client(server) as api:
        custom = client.CustomObjectsApi(api)
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        events = take(custom, NAMESPACE, 1, allow_watch_bookmarks=True)
        assert events[0]["type"] == "BOOKMARK"
        assert events[0]["raw_object"]["metadata"]["resourceVersion"] == server.resource_version
        assert events[0]["raw_object"]["kind"] == "ObservabilityAddon"


def test_status_writes_are_seen_by_a_watch_with_their_generation(
    custom: Custom, namespace: str
) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    later(
        0.2,
        lambda: patch_forwarding_status(custom, namespace),
    )
    events = take(custom, namespace, 1, resource_version=created["metadata"]["resourceVersion"])
    assert summary(events) == [("MODIFIED", NAME, 1)]
    assert events[0]["raw_object"]["status"]["conditions"][0]["type"] == "Available"


def test_put_object_is_seen_by_watches(server: APIServer, custom: Custom, namespace: str) -> None:
    created = custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
    edited = {**created, "status": {"conditions": [forwarding_condition(status="False")]}}
    later(0.2, lambda: server.put_object(GROUP, VERSION, PLURAL, edited))
    events = take(custom, namespace, 1, resource_version=created["metadata"]["resourceVersion"])
    assert events[0]["raw_object"]["status"]["conditions"][0]["status"] == "False"
    stored = server.get_object(GROUP, VERSION, PLURAL, namespace, NAME)
    assert (
        stored is not None
        and stored["metadata"]["resourceVersion"]
        == (events[0]["raw_object"]["metadata"]["resourceVersion"])
    )
