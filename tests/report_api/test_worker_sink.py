"""The report server in front of the real reconcile worker (on the in-memory store): the worker,
through `WorkerSink`, fits the ReportSink seam, its verdicts reach the caller, and its failures
(a lost Lease, a stopped worker) become 503s with Retry-After."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from controller.report_api.server import ReportServer
from controller.reporter.client import ReportClient
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.worker import Worker
from controller.spoke.worker_sink import WorkerSink
from statemachines.config import Config
from tests.clock import FakeClock
from tests.report_api.conftest import TOKENS, ServerFactory, call
from tests.spoke.fakes import FakeAddonStore
from tests.support import MC


@pytest.fixture
def store() -> FakeAddonStore:
    return FakeAddonStore()


@pytest.fixture
def worker(store: FakeAddonStore, config: Config) -> Iterator[Worker]:
    worker = Worker(
        store, config, metrics=ControllerMetrics(CollectorRegistry()), clock=FakeClock()
    )
    worker.start()
    yield worker
    worker.stop()


@pytest.fixture
def served(make_server: ServerFactory, worker: Worker) -> ReportServer:
    return make_server(sink=WorkerSink(worker))


def test_the_worker_judges_reports_sent_over_http(
    served: ReportServer, worker: Worker, store: FakeAddonStore
) -> None:
    with ReportClient(served.url, token=TOKENS["operator"]) as operator:
        assert operator.report(reason="UpdateSuccessful")["verdict"] == "accepted"
        assert operator.report(MC, reason="UpdateFailure")["state"] == "Degraded"
    with ReportClient(served.url, token=TOKENS["mc"]) as collector:
        refused = collector.report(MC, reason="ForwardSuccessful")
    assert (refused["verdict"], refused["reason"]) == ("refused", "UpdateFailure")
    worker.tick().result(timeout=5)
    collectors = {c["name"]: c for c in store.status["collectors"]}
    assert (collectors[MC]["state"], collectors[MC]["reason"]) == ("Degraded", "UpdateFailure")


def test_a_follower_answers_503_not_leader(served: ReportServer, worker: Worker) -> None:
    worker.set_leader(False)
    answer = call(served.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["operator"])
    assert (answer.status, answer.body["error"]["reason"]) == (503, "NotLeader")
    assert answer.headers["Retry-After"] == "1"


def test_a_stopped_worker_answers_503(served: ReportServer, worker: Worker) -> None:
    worker.stop()
    answer = call(served.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["operator"])
    assert (answer.status, answer.body["error"]["reason"]) == (503, "ServiceUnavailable")
    assert answer.headers["Retry-After"] == "1"
