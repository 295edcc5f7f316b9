"""The metrics and probe servers under a crowd: a listen backlog and a bounded pool of workers,
so that many clients at once all get an answer and silent connections cannot hold the pool
(the standard library's backlog of 5 lost connections with 20 clients)."""

from __future__ import annotations

import socket
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from prometheus_client import CollectorRegistry

from controller.ops.metrics import MetricsServer
from controller.ops.probes import ProbeServer
from controller.spoke.metrics import ControllerMetrics

pytestmark = pytest.mark.slow


@pytest.fixture
def probes() -> Iterator[ProbeServer]:
    server = ProbeServer(host="127.0.0.1", port=0, liveness={"worker": lambda: True}, readiness={})
    server.start()
    yield server
    server.stop()


@pytest.fixture
def metrics() -> Iterator[MetricsServer]:
    registry = CollectorRegistry()
    ControllerMetrics(registry)
    server = MetricsServer(registry, host="127.0.0.1", port=0)
    server.start()
    yield server
    server.stop()


def status(port: int, path: str, timeout: float = 10) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as answer:
        code: int = answer.status
        return code


@pytest.mark.parametrize(("which", "path"), [("probes", "/healthz"), ("metrics", "/metrics")])
def test_fifty_clients_at_once_all_get_an_answer(
    request: pytest.FixtureRequest, which: str, path: str
) -> None:
    port = request.getfixturevalue(which).port
    with ThreadPoolExecutor(50) as pool:
        assert list(pool.map(lambda _: status(port, path), range(50))) == [200] * 50


@pytest.mark.parametrize(("which", "path"), [("probes", "/healthz"), ("metrics", "/metrics")])
def test_silent_connections_cannot_hold_the_workers(
    request: pytest.FixtureRequest, which: str, path: str
) -> None:
    """More silent connections than workers: the kubelet's probe still gets its answer (once
    the oldest silent one is reclaimed, 5 s on; the client waits far longer, for a loaded
    machine: what is asserted is the answer, not how soon)."""
    port = request.getfixturevalue(which).port
    silent = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(8)]
    try:
        assert status(port, path, timeout=60) == 200
    finally:
        for sock in silent:
            sock.close()
