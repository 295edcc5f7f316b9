"""The report API's door: requests whose HTTP/1.1 framing is ambiguous are refused with 400 and
their connection closed (RFC 9112: the request-smuggling patterns), the size and chunking rules
hold, and a burst of reporters or a crowd of idle connections cannot exhaust the server."""

from __future__ import annotations

import http.client
import json
import select
import socket
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from controller.report_api.server import ReportServer
from tests.report_api.conftest import TOKENS, CoreSink, ServerFactory, call

pytestmark = pytest.mark.slow

OP = TOKENS["operator"]
BODY = b'{"reason": "UpdateSuccessful", "message": "deployed"}'


def address(server: ReportServer) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def head(*lines: bytes) -> bytes:
    start = [
        b"POST /v1/reports HTTP/1.1",
        b"Host: x",
        b"Content-Type: application/json",
        b"Authorization: Bearer " + OP.encode(),
    ]
    return b"\r\n".join([*start, *lines]) + b"\r\n\r\n"


def send(
    server: ReportServer, raw: bytes, *, timeout: float = 5
) -> tuple[int, dict[str, str], bytes, bool]:
    """(status, headers, body, whether the server closed the connection after answering)."""
    with socket.create_connection(address(server), timeout=timeout) as sock:
        sock.sendall(raw)
        response = http.client.HTTPResponse(sock)
        response.begin()
        body = response.read()
        try:
            closed = sock.recv(1) == b""
        except (TimeoutError, ConnectionResetError):
            closed = False
        return response.status, dict(response.headers), body, closed


def assert_refused_at_the_door(
    server: ReportServer, sink: CoreSink, raw: bytes, *, says: str
) -> None:
    status, headers, body, closed = send(server, raw)
    assert status == 400
    assert headers["Connection"] == "close"
    assert closed
    error = json.loads(body)["error"]
    assert (error["code"], error["reason"]) == (400, "BadRequest")
    assert says in error["message"]
    assert sink.judged == []


def test_two_content_lengths_that_disagree_are_400(server: ReportServer, sink: CoreSink) -> None:
    """RFC 9112 6.3: a front end framing by the first and us by the second would desync."""
    raw = head(f"Content-Length: {len(BODY)}".encode(), b"Content-Length: 0") + BODY
    assert_refused_at_the_door(server, sink, raw, says="disagree")


def test_two_equal_content_lengths_are_one(server: ReportServer, sink: CoreSink) -> None:
    """RFC 9110 8.6 lets a recipient take identical duplicates as one value."""
    length = f"Content-Length: {len(BODY)}".encode()
    status, _, _, _ = send(server, head(length, length) + BODY)
    assert status == 200
    assert len(sink.judged) == 1


@pytest.mark.parametrize("value", [b"\xb2", b"4\xb2", b"+46", b"-1", b"0x2e", b"46 46"], ids=repr)
def test_a_content_length_not_in_ascii_digits_is_400(
    server: ReportServer, sink: CoreSink, value: bytes
) -> None:
    """`"\\xb2".isdigit()` is true in Python: the byte ² once closed the connection unanswered."""
    raw = head(b"Content-Length: " + value) + BODY
    assert_refused_at_the_door(server, sink, raw, says="not a byte count")


def test_a_header_line_with_a_bare_cr_is_400(server: ReportServer, sink: CoreSink) -> None:
    """RFC 9112 2.2: the e-mail parser would split the line at the CR into two fields."""
    raw = head(f"Content-Length: {len(BODY)}".encode(), b"X-Note: a\rContent-Length: 0") + BODY
    assert_refused_at_the_door(server, sink, raw, says="CR")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        pytest.param(b"X-Note: a\x00b", "control character", id="nul"),
        pytest.param(b"X-Note: a\x1bb", "control character", id="escape"),
        pytest.param(b" folded", "folded", id="obs-fold"),
        pytest.param(b"Content-Length : 0", "token name", id="space-before-colon"),
        pytest.param(b"no colon here", "token name", id="no-colon"),
    ],
)
def test_a_header_line_that_is_not_name_colon_value_is_400(
    server: ReportServer, sink: CoreSink, line: bytes, says: str
) -> None:
    raw = head(f"Content-Length: {len(BODY)}".encode(), line) + BODY
    assert_refused_at_the_door(server, sink, raw, says=says)


def test_the_openapi_path_has_the_same_door(server: ReportServer) -> None:
    raw = b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
    status, headers, _, _ = send(server, raw)
    assert (status, headers["Connection"]) == (400, "close")


def test_transfer_encoding_with_content_length_is_411_and_closes(
    server: ReportServer, sink: CoreSink
) -> None:
    """RFC 9112 6.1: a server may refuse a request with both, and must close the connection;
    411 tells the sender what we take instead (a Content-Length alone)."""
    raw = head(b"Transfer-Encoding: chunked", f"Content-Length: {len(BODY)}".encode())
    status, headers, _, closed = send(server, raw + b"2\r\n{}\r\n0\r\n\r\n")
    assert (status, headers["Connection"], closed) == (411, "close", True)
    assert sink.judged == []


def test_a_body_over_65536_bytes_is_413(server: ReportServer) -> None:
    body = json.dumps({"reason": "UpdateSuccessful", "message": "x" * 65536}).encode()
    status, headers, _, _ = send(server, head(f"Content-Length: {len(body)}".encode()) + body)
    assert (status, headers["Connection"]) == (413, "close")
    body = json.dumps({"reason": "UpdateSuccessful", "message": "x" * 65000}).encode()
    status, _, _, _ = send(server, head(f"Content-Length: {len(body)}".encode()) + body)
    assert status == 200


def test_fifty_reporters_at_once_all_get_an_answer(make_server: ServerFactory) -> None:
    """With the standard library's backlog of 5, 20 reporters starting together lost
    connections."""
    server = make_server(workers=4)

    def report(_: int) -> int:
        return call(server.url, body={"reason": "UpdateSuccessful"}, token=OP).status

    with ThreadPoolExecutor(50) as pool:
        assert list(pool.map(report, range(50))) == [200] * 50


@pytest.fixture
def idle(make_server: ServerFactory) -> Iterator[tuple[ReportServer, list[socket.socket]]]:
    """A server with 2 workers, both held by connections that sent nothing."""
    server = make_server(workers=2)
    held = [socket.create_connection(address(server), timeout=5) for _ in range(2)]
    yield server, held
    for sock in held:
        sock.close()


def test_idle_connections_cannot_hold_the_workers(
    idle: tuple[ReportServer, list[socket.socket]],
) -> None:
    """A silent connection is closed for the newcomer after 5 s, instead of making it wait for
    the 10 s timeout of both."""
    server, held = idle
    status, _, _, _ = send(server, head(f"Content-Length: {len(BODY)}".encode()) + BODY, timeout=20)
    assert status == 200
    closed, _, _ = select.select(held, [], [], 5)
    assert closed
    assert all(sock.recv(1) == b"" for sock in closed)


def test_an_idle_keep_alive_connection_yields_its_worker(make_server: ServerFactory) -> None:
    """A keep-alive connection between requests holds no worker that another needs."""
    server = make_server(workers=1)
    kept = http.client.HTTPConnection(*address(server), timeout=5)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {OP}"}
    try:
        kept.request("POST", "/v1/reports", body=BODY, headers=headers)
        assert kept.getresponse().read()
        answers: list[int] = []
        other = threading.Thread(
            target=lambda: answers.append(call(server.url, body=BODY, token=OP).status)
        )
        other.start()
        other.join(10)
        assert answers == [200]
    finally:
        kept.close()


def test_a_burst_beyond_the_workers_is_answered_in_turn(
    make_server: ServerFactory, sink: CoreSink
) -> None:
    """Busy workers (a slow sink) make the others queue, not fail."""
    server = make_server(workers=2)
    sink.free.clear()
    threading.Timer(0.2, sink.free.set).start()
    with ThreadPoolExecutor(10) as pool:
        statuses = list(pool.map(lambda _: call(server.url, body=BODY, token=OP).status, range(10)))
    assert statuses == [200] * 10
