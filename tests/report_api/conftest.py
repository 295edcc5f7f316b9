"""Fixtures of the report API tests: a real server on loopback in front of a real sink.

`CoreSink` is what the reconcile worker does, minus Kubernetes: it runs the real core
(`statemachines.apply`) on a fake clock, under a lock. It can be told that it lost the Lease
(`leader = False`) or that it is busy (`free.clear()`), which are the sink's two ways to fail.
Tokens come from a static table; the grants are the example of the issue.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml
from prometheus_client import CollectorRegistry

from controller.report_api.auth import Authenticator, Authorizer, StaticTokenAuthenticator
from controller.report_api.server import ReportMetrics, ReportServer
from controller.report_api.sink import SinkNotLeaderError, SinkUnavailableError
from statemachines.config import Config
from statemachines.core import apply, start
from statemachines.reports import Report, Verdict
from tests.clock import FakeClock

NS = "open-cluster-management-addon-observability"
OPERATOR_SA = f"system:serviceaccount:{NS}:endpoint-observability-operator-sa"
MC_SA = f"system:serviceaccount:{NS}:metrics-collector-sa"
UWL_SA = f"system:serviceaccount:{NS}:uwl-metrics-collector-sa"
STRANGER_SA = f"system:serviceaccount:{NS}:someone-else"

GRANTS = f"""
operator: [{OPERATOR_SA}]
collectors:
  metrics-collector: [{MC_SA}]
  uwl-metrics-collector: [{UWL_SA}]
"""

# Distinctive values, so that a leak into a log cannot be missed by a substring search.
TOKENS = {
    "operator": "op-tok-7f3a9c1e5b",
    "mc": "mc-tok-2d8e4f6a0c",
    "uwl": "uwl-tok-9b1c3e5d7f",
    "stranger": "stranger-tok-4a6c8e0b2d",
}
T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


class CoreSink:
    """A ReportSink that judges with the real core; what the worker does, without the CR."""

    def __init__(self, config: Config, clock: FakeClock) -> None:
        self.config = config
        self.clock = clock
        self.state = start(config, clock())
        self.leader = True
        self.free = threading.Event()  # cleared: the worker does not get to a report in time
        self.free.set()
        self.judged: list[Report] = []
        self.attempts = 0
        self._lock = threading.Lock()

    def submit(self, report: Report, *, timeout: float) -> Verdict:
        with self._lock:
            self.attempts += 1
        if not self.leader:
            raise SinkNotLeaderError("this replica does not hold the Lease")
        if not self.free.wait(timeout):
            raise SinkUnavailableError(f"no verdict within {timeout}s", timeout=True)
        with self._lock:
            outcome = apply(self.state, report, self.clock(), config=self.config)
            self.state = outcome.state
            self.judged.append(report)
        assert outcome.verdict is not None
        return outcome.verdict


@dataclass
class Answer:
    status: int
    headers: Mapping[str, str]
    body: Any


def call(
    url: str,
    method: str = "POST",
    path: str = "/v1/reports",
    *,
    body: bytes | dict[str, Any] | None = None,
    token: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Answer:
    """One request over a fresh connection, with full control of the bytes sent."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host.strip("[]"), int(port), timeout=5)
    sent = {"Content-Type": "application/json"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    payload = json.dumps(body).encode() if isinstance(body, dict) else body
    try:
        connection.request(method, path, body=payload, headers=sent)
        response = connection.getresponse()
        raw = response.read()
        return Answer(response.status, dict(response.headers), json.loads(raw) if raw else None)
    finally:
        connection.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def config() -> Config:
    return Config.create()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sink(config: Config, clock: FakeClock) -> CoreSink:
    return CoreSink(config, clock)


@pytest.fixture
def authorizer() -> Authorizer:
    return Authorizer.from_mapping(yaml.safe_load(GRANTS))


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


ServerFactory = Callable[..., ReportServer]


@pytest.fixture
def make_server(
    sink: CoreSink, config: Config, authorizer: Authorizer, registry: CollectorRegistry
) -> Iterator[ServerFactory]:
    """Starts report servers (stopped at teardown); keywords override the defaults."""
    started: list[ReportServer] = []

    def make(**overrides: Any) -> ReportServer:
        authenticator: Authenticator = StaticTokenAuthenticator(
            {TOKENS["operator"]: OPERATOR_SA, TOKENS["mc"]: MC_SA, TOKENS["uwl"]: UWL_SA}
            | {TOKENS["stranger"]: STRANGER_SA}
        )
        chosen_sink = overrides.pop("sink", sink)
        if "metrics" not in overrides:  # one registry holds one set of instruments
            overrides["metrics"] = ReportMetrics(CollectorRegistry() if started else registry)
        options: dict[str, Any] = {
            "authenticator": authenticator,
            "authorizer": authorizer,
            "config": config,
            "host": "127.0.0.1",
            "port": 0,
        } | overrides
        server = ReportServer(chosen_sink, **options)
        server.start()
        started.append(server)
        return server

    yield make
    for server in started:
        server.stop()


@pytest.fixture
def server(make_server: ServerFactory) -> ReportServer:
    return make_server()
