"""The seam against servers that are not kube-apiserver: one that trickles its answer a byte
at a time, claims a body of 2 GiB, streams a chunked body without end or answers in gzip
unasked. Each call ends with a KubeError saying what went wrong, within its bounds, and holds
no more than `MAX_ANSWER` bytes; a refused watch keeps the server's Status message (kube-
apiserver's RBAC 403 names the verb and the resource)."""

from __future__ import annotations

import contextlib
import gzip
import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from controller.kube.answers import MAX_ANSWER
from controller.kube.api import CONFIG_MAP, ForbiddenError, KubeError
from controller.kube.connection import Connection
from controller.kube.rest import RestKube

pytestmark = pytest.mark.integration
Answer = Callable[[http.server.BaseHTTPRequestHandler], None]
FORBIDDEN = {
    "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
    "message": 'configmaps is forbidden: User "agent" cannot watch resource "configmaps" in '
               'API group "" in the namespace "edge"',
}  # fmt: skip


def trickle(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", "1000")
    handler.end_headers()
    for _ in range(1000):  # a byte every 50 ms: 50 s in all, each read well within its timeout
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.05)


def trickled_headers(handler: http.server.BaseHTTPRequestHandler) -> None:
    """A status line and then a header a byte every 50 ms, for ever: each read in time."""
    handler.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    while True:
        handler.wfile.write(b"a")
        handler.wfile.flush()
        time.sleep(0.05)


def no_answer(handler: http.server.BaseHTTPRequestHandler) -> None:
    """Takes the request and says nothing until the client hangs up."""
    while handler.rfile.read(1):
        pass


def claims_two_gib(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(2 << 30))
    handler.end_headers()
    handler.wfile.write(b"{")


def endless(handler: http.server.BaseHTTPRequestHandler) -> None:
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    chunk = b" " * (1 << 20)
    while True:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))


def gzipped(handler: http.server.BaseHTTPRequestHandler) -> None:
    body = gzip.compress(b" " * (8 << 20) + b"{}")  # 8 MiB of JSON in 8 KiB
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Encoding", "gzip")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def forbidden(handler: http.server.BaseHTTPRequestHandler) -> None:
    body = json.dumps(FORBIDDEN).encode()
    handler.send_response(403)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


def watch_stream(*lines: bytes, endless: bytes = b"") -> Answer:
    """A chunked watch answer: `lines`, then `endless` repeated until the client hangs up."""

    def answer(handler: http.server.BaseHTTPRequestHandler) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        for chunk in [*lines, *([endless] * (1 << 20) if endless else [])]:
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.write(b"0\r\n\r\n")

    return answer


@pytest.fixture
def serve() -> Iterator[Callable[[Answer], RestKube]]:
    servers: list[http.server.ThreadingHTTPServer] = []

    def start(answer: Answer) -> RestKube:
        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                with contextlib.suppress(OSError):  # the client hung up: what it should do
                    answer(self)

            def log_message(self, *args: object) -> None:
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        connection = Connection(f"http://127.0.0.1:{server.server_address[1]}")
        return RestKube(connection, request_timeout=1.0)

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (trickle, "answer took too long|ReadTimeoutError"),  # a stalled loaded machine: either
        (trickled_headers, "answer took too long"),
        (claims_two_gib, f"answer is over {MAX_ANSWER >> 20} MiB"),
        (endless, f"answer is over {MAX_ANSWER >> 20} MiB"),
        (gzipped, "answered in 'gzip', not asked for"),
    ],
    ids=["trickle", "trickled-headers", "claims-2-GiB", "endless-chunked", "gzip-unasked"],
)
def test_a_call_to_a_hostile_server_ends_with_a_clear_error(
    serve: Callable[[Answer], RestKube], answer: Answer, problem: str
) -> None:
    kube = serve(answer)
    with pytest.raises(KubeError, match=problem) as caught:
        kube.get(CONFIG_MAP, "edge", "settings")
    assert str(caught.value).startswith("get ConfigMap edge/settings: ")


def test_a_refused_watch_keeps_the_servers_status_message(
    serve: Callable[[Answer], RestKube],
) -> None:
    kube = serve(forbidden)
    watch = kube.watch(CONFIG_MAP, "edge", resource_version="1", timeout_seconds=5)
    with pytest.raises(ForbiddenError) as caught:
        next(iter(watch))
    assert 'cannot watch resource "configmaps"' in str(caught.value)


@pytest.mark.parametrize("answer", [no_answer, trickled_headers], ids=["silent", "trickled"])
def test_a_watch_whose_response_never_begins_ends_within_the_request_timeout(
    serve: Callable[[Answer], RestKube], answer: Answer
) -> None:
    """The stream may stay quiet up to the server's timeoutSeconds (an hour here), but its
    headers come within the request timeout (1 s), as any call's."""
    kube = serve(answer)
    watch = kube.watch(CONFIG_MAP, "edge", resource_version="1", timeout_seconds=3600)
    with pytest.raises(KubeError, match="answer took too long"):
        next(iter(watch))


ADDED = b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"2"}}}\n'


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (watch_stream(ADDED, b'{"type":"ADDED","object":', endless=b" " * (1 << 20)),
         f"a watch line over {MAX_ANSWER >> 20} MiB"),
        (watch_stream(ADDED, b'{"type":"MODIFIED","object":{"metadata":"a"}}\n'),
         "a watch event whose object has no metadata object"),
    ],
    ids=["a-line-without-end", "metadata-not-an-object"],
)  # fmt: skip
def test_a_hostile_watch_stream_ends_with_a_clear_error_after_what_it_said_well(
    serve: Callable[[Answer], RestKube], answer: Answer, problem: str
) -> None:
    kube = serve(answer)
    seen = []
    with pytest.raises(KubeError, match=problem):
        for event in kube.watch(CONFIG_MAP, "edge", resource_version="1", timeout_seconds=5):
            seen.append((event.type, event.object["metadata"]["name"]))
    assert seen == [("ADDED", "a")]
