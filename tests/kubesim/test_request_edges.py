"""The edges of a request in kubesim, each as kube-apiserver answers it: the body is read only
once the caller is authenticated (an unauthenticated caller's body is never waited for), a
chunked body is capped at MaxRequestBodyBytes like any other (413), a YAML body whose aliases
expand past go-yaml's ratio is refused (400, `document contains excessive aliasing`), a query
integer is strconv.ParseInt's (an out-of-range `timeoutSeconds` is a 400, a huge valid one
wraps as Go's Duration and ends the watch), and an object another writer stored without the
fields kube-apiserver's strategy fills still takes writes."""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator

import pytest
from kubernetes import client

from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import CRD
from tests.support import api_client

pytestmark = pytest.mark.integration
TOKENS = {"admin": UserInfo("admin", groups=("system:masters",))}
LIMIT = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS) as srv:
        yield srv


def answer(server: APIServer, raw: bytes) -> tuple[int, dict[str, object]]:
    """Send `raw` (headers, maybe a part of a body) and read the answer; the socket's timeout
    only keeps a broken server from hanging the suite."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(raw)
        reply = http.client.HTTPResponse(sock)
        reply.begin()
        return reply.status, json.loads(reply.read())


@pytest.mark.parametrize("framing", ["Content-Length: 1000000", "Transfer-Encoding: chunked"])
def test_an_unauthenticated_body_is_not_waited_for(server: APIServer, framing: str) -> None:
    head = (f"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
            f"Content-Type: application/json\r\n{framing}\r\n\r\n")  # fmt: skip
    status, body = answer(server, head.encode() + b'5\r\n{"a":')  # the rest never comes
    assert (status, body["reason"]) == (401, "Unauthorized")


def test_a_chunked_body_past_the_limit_is_413(server: APIServer) -> None:
    head = (b"POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer admin\r\n"
            b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")  # fmt: skip
    chunk = b" " * (LIMIT // 2 + 1)
    frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    status, body = answer(server, head + frame + frame + b"0\r\n\r\n")
    assert (status, body["message"]) == (413, f"Request entity too large: limit is {LIMIT}")


def test_a_yaml_alias_bomb_is_refused_as_go_yamls_decoder_refuses_it(server: APIServer) -> None:
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 7)
    ]
    document = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bomb}\nbomb:\n" + "".join(
        f"  {line}\n" for line in levels
    )
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        document.encode(),
        {"Authorization": "Bearer admin", "Content-Type": "application/yaml"},
    )
    reply = connection.getresponse()  # fmt: skip
    status = json.loads(reply.read())
    connection.close()
    assert reply.status == 400
    assert status["message"].startswith(
        "the object provided is unrecognized (must be of type ConfigMap): yaml: document "
        "contains excessive aliasing ("
    )


def test_yaml_anchors_short_of_a_bomb_are_read(server: APIServer) -> None:
    document = (b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, labels: &l {a: b}, "
                b"annotations: *l}\n")  # fmt: skip
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        document,
        {"Authorization": "Bearer admin", "Content-Type": "application/yaml"},
    )
    reply = connection.getresponse()  # fmt: skip
    created = json.loads(reply.read())
    connection.close()
    assert reply.status == 201 and created["metadata"]["annotations"] == {"a": "b"}


def watch_status(server: APIServer, seconds: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request("GET", f"/api/v1/namespaces?watch=true&timeoutSeconds={seconds}",
                       headers={"Authorization": "Bearer admin"})  # fmt: skip
    reply = connection.getresponse()
    data = reply.read()  # the whole stream: it must end
    connection.close()
    return reply.status, data


def test_a_timeout_beyond_int64_is_parse_ints_400(server: APIServer) -> None:
    status, data = watch_status(server, "99999999999999999999")
    assert status == 400
    assert json.loads(data)["message"] == (
        'strconv.ParseInt: parsing "99999999999999999999": value out of range'
    )


def test_the_largest_int64_timeout_wraps_as_gos_duration_and_ends_the_watch(
    server: APIServer,
) -> None:
    status, _ = watch_status(server, str(2**63 - 1))  # 2^63-1 s as nanoseconds wraps to -1 s
    assert status == 200


def test_a_namespace_stored_without_spec_takes_a_patch(server: APIServer) -> None:
    """etcd holds what another writer put there; the typed decode gives it an empty spec."""
    server.put_object("", "v1", "namespaces", {"metadata": {"name": "bare"}})
    with api_client(server, "admin") as api:
        patched = client.CoreV1Api(api).patch_namespace(
            "bare", {"metadata": {"labels": {"a": "b"}}}
        )
    assert patched.metadata.labels["a"] == "b"
