"""The Python client against the real server: verdicts come back as dicts, a 4xx raises
ReportRejected with the field, a 503 (failover) or a refused connection is retried honouring
Retry-After, and no call outlives its deadline, whatever the server does."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from controller.report_api.server import ReportServer
from controller.report_api.sink import SinkNotLeaderError
from controller.reporter.client import ANSWER_LIMIT, ReportClient, ReportRejected, ReportUnavailable
from statemachines.reports import Report, Verdict
from tests.report_api.conftest import TOKENS, CoreSink, ServerFactory, free_port
from tests.support import MC


class FailoverSink(CoreSink):
    """Not the leader for the first `lost` attempts: the Lease moves to this replica."""

    lost = 1

    def submit(self, report: Report, *, timeout: float) -> Verdict:
        if self.attempts < self.lost:
            self.attempts += 1
            raise SinkNotLeaderError("the Lease is held by the other replica")
        return super().submit(report, timeout=timeout)


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) but never answers."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        yield listener.getsockname()[1]


def test_the_client_carries_the_version_of_an_update(server: ReportServer) -> None:
    with ReportClient(server.url, token=TOKENS["operator"]) as client:
        verdict = client.report(MC, reason="UpdateSuccessful", version="2.15.0")
        assert verdict["verdict"] == "accepted"
        with pytest.raises(ReportRejected) as raised:
            client.report(MC, reason="UpdateFailure", version="2.15.0")
    assert raised.value.field == "version"


def test_report_returns_the_verdict(server: ReportServer) -> None:
    with ReportClient(server.url, token=TOKENS["operator"]) as client:
        verdict = client.report(reason="UpdateSuccessful", message="deployed")
        assert verdict["verdict"] == "accepted"
        assert verdict["collector"] is None
        blocked = client.report(MC, reason="UpdateFailure", observed_generation=1)
    with ReportClient(server.url, token=TOKENS["mc"]) as client:
        refused = client.report(MC, reason="ForwardSuccessful", observed_generation=1)
    assert (blocked["verdict"], blocked["state"]) == ("accepted", "Degraded")
    assert (refused["verdict"], refused["reason"]) == ("refused", "UpdateFailure")
    assert refused["rule"]


@pytest.mark.parametrize(
    ("token", "collector", "reason", "status", "field"),
    [
        pytest.param("operator", "nope", "UpdateFailure", 422, "collector", id="unknown-collector"),
        pytest.param("operator", None, "Nope", 422, "reason", id="unknown-reason"),
        pytest.param(
            "mc", MC, "UpdateFailure", 403, "reason", id="collector-sends-operator-reason"
        ),
        pytest.param(None, None, "UpdateFailure", 401, None, id="no-token"),
    ],
)
def test_a_4xx_raises_report_rejected_with_the_field(
    server: ReportServer,
    sink: CoreSink,
    *,
    token: str | None,
    collector: str | None,
    reason: str,
    status: int,
    field: str | None,
) -> None:
    client = ReportClient(server.url, token=TOKENS[token] if token else None, retries=3)
    with client, pytest.raises(ReportRejected) as caught:
        client.report(collector, reason=reason)
    assert (caught.value.status, caught.value.field) == (status, field)
    assert caught.value.message
    assert sink.attempts == 0, "a 4xx is never retried, and never reaches the sink"


def test_a_503_is_retried_after_retry_after(
    make_server: ServerFactory, config: Any, clock: Any
) -> None:
    sink = FailoverSink(config, clock)
    server = make_server(sink=sink)
    started = time.monotonic()
    with ReportClient(server.url, token=TOKENS["operator"], backoff=0.0) as client:
        verdict = client.report(reason="UpdateSuccessful")
    assert verdict["verdict"] == "accepted"
    assert sink.attempts == 2
    assert time.monotonic() - started >= 0.9, "Retry-After: 1 was honoured"


@pytest.mark.slow
def test_a_failover_longer_than_eight_tries_is_ridden_out_within_the_deadline(
    make_server: ServerFactory, config: Any, clock: Any
) -> None:
    """A leader change of some ten seconds: 503 with `Retry-After: 1` ten times, then the new
    leader's verdict; the client keeps trying for its whole deadline (it gave up after 8)."""
    sink = FailoverSink(config, clock)
    sink.lost = 10
    server = make_server(sink=sink)
    with ReportClient(server.url, token=TOKENS["operator"], deadline=60.0) as client:
        assert client.report(reason="UpdateSuccessful")["verdict"] == "accepted"
    assert sink.attempts == 11  # ten refusals, then the verdict


def test_a_message_of_emoji_is_sent_as_utf8_and_cut_by_the_rules_not_refused(
    server: ReportServer, sink: CoreSink
) -> None:
    """6,000 emoji: 24 KB as UTF-8 (the report API takes 64 KiB), 72 KB if each were escaped
    as \\uXXXX (refused with 413, the report lost). The rules cut the message to 1,024."""
    with ReportClient(server.url, token=TOKENS["operator"]) as client:
        verdict = client.report(reason="UpdateSuccessful", message="😀" * 6000)
    assert verdict["verdict"] == "accepted"


class _RetryLogged(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.seen = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if "Retrying" in record.getMessage():
            self.seen.set()


def test_a_refused_connection_is_retried_until_the_server_is_up(
    make_server: ServerFactory, sink: CoreSink
) -> None:
    port = free_port()
    retrying = _RetryLogged()
    urllib3_log = logging.getLogger("urllib3.connectionpool")
    urllib3_log.addHandler(retrying)
    result: dict[str, Any] = {}

    def report() -> None:
        url = f"http://127.0.0.1:{port}"
        with ReportClient(url, token=TOKENS["operator"], retries=8, backoff=0.05) as client:
            try:
                result["verdict"] = client.report(reason="UpdateSuccessful")
            except Exception as error:
                result["error"] = error

    worker = threading.Thread(target=report, name="test-client")
    worker.start()
    try:
        assert retrying.seen.wait(5), "the first attempt was refused and retried"
        make_server(port=port)
    finally:
        worker.join(10)
        urllib3_log.removeHandler(retrying)
    assert not worker.is_alive()
    assert result.get("verdict", result)["verdict"] == "accepted"
    assert len(sink.judged) == 1


def test_the_deadline_beats_retry_after(server: ReportServer, sink: CoreSink) -> None:
    """Retry-After: 1 but 0.5 s left: give up now rather than sleep past the deadline."""
    sink.leader = False
    with (
        ReportClient(server.url, token=TOKENS["operator"], retries=10, deadline=0.5) as client,
        pytest.raises(ReportUnavailable, match="would start after the deadline"),
    ):
        client.report(reason="UpdateSuccessful")
    assert sink.attempts == 1


def test_a_silent_server_costs_no_more_than_the_deadline(silent_port: int) -> None:
    url = f"http://127.0.0.1:{silent_port}"
    with (
        ReportClient(url, timeout=0.2, retries=20, backoff=0.01, deadline=0.6) as client,
        # ended by the deadline (20 attempts of 0.2 s would take 4 s): no attempt starts after
        # it, and the one running when it passes is cut
        pytest.raises(ReportUnavailable, match="gave up"),
    ):
        client.report(reason="UpdateSuccessful")


def test_nobody_listening_gives_up_within_the_deadline() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with (
        ReportClient(url, retries=1000, backoff=0.01, deadline=0.5) as client,
        pytest.raises(ReportUnavailable, match="gave up"),  # the deadline, not the retries
    ):
        client.report(reason="UpdateSuccessful")


def test_retries_run_out_before_the_deadline() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with (
        ReportClient(url, retries=2, backoff=0.0) as client,
        pytest.raises(ReportUnavailable) as caught,
    ):
        client.report(reason="UpdateSuccessful")
    assert str(caught.value).startswith(f"{url}/v1/reports: ")  # the cause, in the OS's words


def test_a_token_callable_is_read_for_every_call(server: ReportServer) -> None:
    tokens = iter([TOKENS["operator"], "expired-token"])
    with ReportClient(server.url, token=lambda: next(tokens)) as client:
        assert client.report(reason="UpdateSuccessful")["verdict"] == "accepted"
        with pytest.raises(ReportRejected) as caught:
            client.report(reason="UpdateSuccessful")
    assert caught.value.status == 401


def test_the_client_never_shows_its_token(server: ReportServer) -> None:
    client = ReportClient(server.url, token=TOKENS["operator"])
    assert TOKENS["operator"] not in repr(client)


def test_a_token_a_header_cannot_carry_is_never_quoted() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with (
        ReportClient(url, token="first-line\nsecond-line", retries=0, deadline=1) as client,
        pytest.raises(ValueError, match="bearer token") as caught,
    ):
        client.report(reason="UpdateSuccessful")
    assert "line" not in str(caught.value)


@pytest.mark.parametrize("url", ["127.0.0.1:8080", "ftp://host/", "http://"])
def test_a_url_that_is_not_http_is_refused(url: str) -> None:
    with pytest.raises(ValueError, match="http"):
        ReportClient(url)


class _Misbehaving:
    """A server speaking just enough HTTP to misbehave: `answer` gets each accepted socket
    after the request has been read."""

    def __init__(self, answer: Callable[[socket.socket], None]) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self.sent = 0
        self._answer = answer
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                peer, _ = self._listener.accept()
                with peer, contextlib.suppress(OSError):
                    peer.recv(65536)
                    self._answer(peer)

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def misbehaving() -> Iterator[Callable[[Callable[[socket.socket], None]], _Misbehaving]]:
    servers: list[_Misbehaving] = []

    def start(answer: Callable[[socket.socket], None]) -> _Misbehaving:
        servers.append(_Misbehaving(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _trickle(peer: socket.socket, head: bytes) -> None:
    peer.sendall(head)
    for _ in range(200):  # one byte well within every read timeout, for 20 s
        peer.sendall(b" ")
        time.sleep(0.1)


@pytest.mark.parametrize(
    "head",
    [
        pytest.param(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", id="body"),
        pytest.param(b"HTTP/1.1 200 OK\r\nX-Slow: ", id="headers"),
    ],
)
def test_the_client_enforces_its_total_deadline_while_reading_a_body(
    misbehaving: Callable[[Callable[[socket.socket], None]], _Misbehaving], head: bytes
) -> None:
    """Issue item: deadline=5 took 100 s against a server trickling its answer."""
    server = misbehaving(lambda peer: _trickle(peer, head))
    with (
        ReportClient(server.url, timeout=0.5, retries=3, deadline=1.0) as client,
        pytest.raises(ReportUnavailable, match="deadline"),  # the server trickles for 100 s
    ):
        client.report(reason="UpdateSuccessful")


def test_every_call_shares_one_deadline_thread(server: ReportServer) -> None:
    """The deadlines of all calls are kept by one thread, not a thread per call: a collector
    reporting often must not pay a thread's start for each report."""
    with ReportClient(server.url, token=TOKENS["operator"]) as client:
        for _ in range(20):
            client.report(reason="UpdateSuccessful")
    # this client's calls made no thread but the one alarm (the whole process's count is
    # the test runner's business: other tests' threads come and go meanwhile)
    assert [t.name for t in threading.enumerate()].count("deadlines") == 1


def test_the_client_does_not_read_an_answer_larger_than_its_limit(
    misbehaving: Callable[[Callable[[socket.socket], None]], _Misbehaving],
) -> None:
    """Issue item: a 300 MiB answer was read whole into memory."""
    size = 300 << 20

    def flood(peer: socket.socket) -> None:
        peer.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
        chunk = b"x" * 65536
        while server.sent < size:
            peer.sendall(chunk)
            server.sent += len(chunk)

    server = misbehaving(flood)
    with (
        ReportClient(server.url, retries=0, deadline=10) as client,
        pytest.raises(ReportUnavailable, match=f"more than {ANSWER_LIMIT} bytes"),
    ):
        client.report(reason="UpdateSuccessful")
    time.sleep(0.2)  # whatever the kernel's buffers still take
    assert server.sent < 16 * ANSWER_LIMIT, "the client stopped reading near its limit"
