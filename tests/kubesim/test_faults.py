"""Fault injection and outages: injected failures are kube-apiserver Statuses the client maps
like real ones, they fire only as often and only where asked, and a server stopped and started
again on the same port keeps its data while refusing connections in between."""

from __future__ import annotations

import time
from typing import Any

import pytest
import urllib3
from kubernetes import client

from kubesim import APIServer, RequestInfo
from tests.kubesim.conftest import (
    CRD,
    GROUP,
    NAME,
    PLURAL,
    VERSION,
    addon,
    patch_forwarding_status,
    status_of,
)
from tests.support import api_client

pytestmark = pytest.mark.integration
Custom = client.CustomObjectsApi


def _status_write(info: RequestInfo) -> bool:
    return info.resource == PLURAL and info.subresource == "status" and info.verb == "patch"


def test_fail_next_answers_n_requests_then_recovers(
    server: APIServer, custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    server.faults.fail_next(2, 503)
    for _ in range(2):
        with pytest.raises(client.ApiException) as caught:
            custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
        assert status_of(caught.value)["reason"] == "ServiceUnavailable"
    assert custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    assert server.faults.pending() == 0


def test_a_429_carries_retry_after(
    server: APIServer, custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    server.faults.fail_next(1, 429, retry_after=2, match=_status_write)
    with pytest.raises(client.ApiException) as caught:
        patch_forwarding_status(custom, namespace)
    assert caught.value.headers["Retry-After"] == "2"
    status = status_of(caught.value)
    assert (status["reason"], status["details"]) == ("TooManyRequests", {"retryAfterSeconds": 2})


def test_urllib3_retries_a_get_after_retry_after_by_itself(
    server: APIServer, custom: Custom, namespace: str
) -> None:
    server.faults.fail_next(1, 429, retry_after=1)
    began = time.monotonic()
    custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert time.monotonic() - began >= 1
    assert [r.code for r in server.audit if r.verb == "list"] == [429, 200]


def test_a_match_confines_the_fault_to_status_writes(
    server: APIServer, custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    server.faults.fail_next(1, 500, match=_status_write)
    custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    with pytest.raises(client.ApiException) as caught:
        patch_forwarding_status(custom, namespace)
    status = status_of(caught.value)
    assert (status["code"], status["reason"]) == (500, "InternalError")
    assert "status" not in custom.get_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, NAME
    )
    assert (
        patch_forwarding_status(custom, namespace)["status"]["conditions"][0]["type"] == "Available"
    )


def test_conflict_next_write_looks_like_a_lost_race(
    server: APIServer, custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    server.faults.conflict_next_write()
    custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)  # not a write
    with pytest.raises(client.ApiException) as caught:
        patch_forwarding_status(custom, namespace)
    status = status_of(caught.value)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        f'Operation cannot be fulfilled on {PLURAL}.{GROUP} "{NAME}": the object has been '
        "modified; please apply your changes to the latest version and try again"
    )
    assert patch_forwarding_status(custom, namespace)["status"]
    assert server.count_requests(resource=PLURAL, subresource="status") == 1


def test_an_injected_401_is_an_unauthorized_status(
    server: APIServer, custom: Custom, namespace: str
) -> None:
    server.faults.fail_next(1, 401)
    with pytest.raises(client.ApiException) as caught:
        custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert status_of(caught.value)["message"] == "Unauthorized"


def test_delay_holds_matching_requests(server: APIServer, custom: Custom, namespace: str) -> None:
    server.faults.delay(0.3, n=1)
    began = time.monotonic()
    custom.list_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL)
    assert time.monotonic() - began >= 0.3
    # n=1: the delay was spent on that request, none is left for the next
    nxt = RequestInfo("GET", f"/apis/{GROUP}/{VERSION}/{PLURAL}", "list", is_resource=True)
    assert server.faults.take(nxt) == (0.0, None)


def test_a_restart_on_the_same_port_keeps_the_data(
    server: APIServer, created: dict[str, Any], namespace: str
) -> None:
    url = server.url
    server.stop()
    config = client.Configuration(host=url)
    config.retries = 0
    with client.ApiClient(config) as api, pytest.raises(urllib3.exceptions.MaxRetryError):
        client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, NAME
        )
    server.start()
    assert server.url == url
    stored = server.get_object(GROUP, VERSION, PLURAL, namespace, NAME)
    assert stored is not None and stored["metadata"]["uid"] == created["metadata"]["uid"]
    with api_client(server) as api:
        fresh = client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, addon("second")
        )
    assert int(fresh["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])


def test_servers_in_one_process_are_independent(
    server: APIServer, created: dict[str, Any], namespace: str
) -> None:
    with APIServer([CRD]) as hub:
        assert hub.port != server.port
        assert hub.get_object(GROUP, VERSION, PLURAL, namespace, NAME) is None
        hub.faults.fail_next(1, 500)
        assert server.get_object(GROUP, VERSION, PLURAL, namespace, NAME) is not None
        assert server.faults.pending() == 0 and hub.faults.pending() == 1
