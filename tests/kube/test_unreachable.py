"""A server that does not answer is said as a person says it, from real sockets: a closed port
is "connection refused to HOST:PORT", a TLS server whose certificate the client does not trust
is "certificate not trusted", a name that does not resolve "no such host"; never the class name
of the HTTP library's error. The OS's own wording is not asserted."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3

from controller.kube.answers import unanswered
from controller.kube.unreachable import unreachable
from controller.reporter.client import ReportClient, ReportUnavailable
from tests.certificates import issue
from tests.names import MC

pytestmark = pytest.mark.integration


def _closed_port() -> int:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        return int(held.getsockname()[1])  # closed again on leaving: nothing listens there


def _failure(url: str, **pool: object) -> Exception:
    manager = urllib3.PoolManager(retries=urllib3.Retry(0), timeout=5, **pool)  # type: ignore[arg-type]
    try:
        manager.request("GET", url)
    except urllib3.exceptions.HTTPError as error:
        return error
    raise AssertionError(f"{url} answered")


@pytest.fixture
def untrusted_tls(tmp_path: Path) -> Iterator[int]:
    """A TLS server whose certificate is signed by a CA the client was not given."""
    _, cert, key = issue("elsewhere").write(tmp_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = int(listener.getsockname()[1])
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                raw, _ = listener.accept()
            except OSError:
                return
            with raw:
                try:
                    with context.wrap_socket(raw, server_side=True):
                        pass
                except (ssl.SSLError, OSError):
                    pass  # the client hung up: it did not trust us

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    stop.set()
    listener.close()
    thread.join(5)


def test_a_closed_port_is_connection_refused_to_host_and_port() -> None:
    port = _closed_port()
    said = unreachable(_failure(f"http://127.0.0.1:{port}/"))
    assert said == f"connection refused to 127.0.0.1:{port}"


def test_an_untrusted_certificate_is_certificate_not_trusted(untrusted_tls: int) -> None:
    said = unreachable(_failure(f"https://127.0.0.1:{untrusted_tls}/", cert_reqs="CERT_REQUIRED"))
    assert said.startswith("certificate not trusted"), said
    assert f"127.0.0.1:{untrusted_tls}" in said


def test_a_name_that_does_not_resolve_is_no_such_host() -> None:
    said = unreachable(_failure("http://no-such-host.invalid:6443/"))  # RFC 6761: never resolves
    assert said.startswith("no-such-host.invalid: no such host"), said


def test_the_kube_error_names_the_call_and_no_class_name() -> None:
    port = _closed_port()
    error = unanswered(_failure(f"http://127.0.0.1:{port}/"), "get pods")
    assert str(error) == f"get pods: connection refused to 127.0.0.1:{port}"
    assert "Error" not in str(error) and "urllib3" not in str(error)


def test_a_reporter_whose_report_api_is_closed_says_connection_refused() -> None:
    port = _closed_port()
    reporter = ReportClient(f"http://127.0.0.1:{port}", retries=0)
    with reporter, pytest.raises(ReportUnavailable) as raised:
        reporter.report(MC, reason="ForwardSuccessful")
    assert f"connection refused to 127.0.0.1:{port}" in str(raised.value), raised.value
    assert "Error" not in str(raised.value)
