"""The worker against bad input and a refusing API server (on the in-memory store): a write
rejected as invalid is answered to the report that caused it and rolled back, reports rolled
back with it are sent back to be judged again (in the acm profile the bookkeeping ConfigMap is
put back too), the worker keeps serving and says when it cannot write; a report that claims a
generation the watch has not delivered makes the worker read the CR before the core judges it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import KubeError, error_for
from controller.spoke.addon import EventRecord
from controller.spoke.bookkeeping import CONFIG_MAP, KEY, config_map_name
from controller.spoke.errors import StatusRejectedError, WorkerError
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.worker import Worker
from statemachines import Config, Report, Verdict, VerdictKind
from statemachines.vocabulary import ACM, State
from tests.names import R
from tests.spoke.conftest import WorkerFactory
from tests.spoke.fakes import NAME, NAMESPACE, FakeAddonStore
from tests.spoke.support import MC, WAIT, boot, collector, condition_of, report, settle


def _invalid(code: int = 422) -> KubeError:
    return error_for(f"replace status: {code}: status.x: Invalid", status=code)


@pytest.mark.parametrize("code", [422, 400])
def test_a_write_rejected_as_invalid_is_answered_to_its_report_and_rolled_back(
    make_worker: WorkerFactory, store: FakeAddonStore, code: int
) -> None:
    events: list[EventRecord] = []
    worker = make_worker(record_events=events.extend)
    boot(worker, collectors=(MC,))
    stored = store.status
    store.faults["replace_status"] = [_invalid(code)]
    with pytest.raises(StatusRejectedError, match=r"status\.x: Invalid"):
        worker.submit(report(R.UPDATE_FAILURE, MC), timeout=WAIT)
    assert worker.state.collector(MC).state is State.AVAILABLE
    assert store.status == stored
    assert [e.reason for e in events if e.type == "Warning"] == ["StatusRejected"]
    assert worker.submit(report(R.UPDATE_FAILURE, MC), timeout=WAIT).kind is VerdictKind.ACCEPTED
    assert collector(store.status, MC)["state"] == "Degraded"


def test_reports_rolled_back_with_a_rejected_write_are_sent_back_to_be_judged_again(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    metrics = ControllerMetrics(CollectorRegistry())
    worker = make_worker(metrics=metrics)
    boot(worker, collectors=(MC,))
    stored = store.status
    # The first report's write fails (the API server is away) once the second report waits in
    # the queue; the retry, carrying both, is rejected: nobody can tell which one made it so.
    gate, writes = threading.Event(), [0]

    def api_server(_: FakeAddonStore) -> None:
        writes[0] += 1
        if writes[0] == 1:
            gate.wait(WAIT)
            raise error_for("503", status=503)
        if writes[0] == 2:
            raise _invalid()

    store.before_replace = api_server
    answers = [_submit(worker, report(R.UPDATE_FAILURE, MC))]
    _until(lambda: writes[0] == 1)  # the worker is inside the first write
    answers.append(_submit(worker, report(R.DISABLED_METRICS, "uwl-metrics-collector")))
    _until(lambda: metrics.registry.get_sample_value("addon_status_queue_depth") == 1)
    gate.set()
    for answer in answers:
        with pytest.raises(WorkerError) as caught:
            answer.result(timeout=WAIT)
        assert not isinstance(caught.value, StatusRejectedError)
    settle(worker)
    assert store.status == stored
    assert worker.submit(report(R.UPDATE_FAILURE, MC), timeout=WAIT).kind is VerdictKind.ACCEPTED


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def _submit(worker: Worker, r: Report) -> Future[Verdict]:
    """Submit from a thread of its own (a report API connection); the answer as a future."""
    answer: Future[Verdict] = Future()

    def send() -> None:
        try:
            answer.set_result(worker.submit(r, timeout=WAIT))
        except Exception as error:
            answer.set_exception(error)

    threading.Thread(target=send, daemon=True).start()
    return answer


def test_a_worker_that_cannot_write_is_not_writing_until_it_can(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker(unready_after=0.0)
    settle(worker)
    assert worker.writing
    store.faults["replace_status"] = [error_for("503", status=503) for _ in range(1000)]
    with pytest.raises(WorkerError):
        worker.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=0.3)
    assert not worker.writing
    store.faults["replace_status"] = []
    deadline = time.monotonic() + WAIT
    while not worker.writing:
        assert time.monotonic() < deadline, "still not writing after the API server came back"
        worker.tick().result(timeout=WAIT)
        time.sleep(0.05)


def test_a_report_ahead_of_the_watch_is_judged_after_reading_the_cr(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()  # no watch runs here: only a read tells the worker the CR moved
    settle(worker)
    store.change_spec({"enableMetrics": False})
    verdict = worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=2), timeout=WAIT)
    assert verdict.kind is VerdictKind.ACCEPTED
    assert condition_of(store.status, "Progressing")["observedGeneration"] == 2


def test_a_report_still_ahead_of_the_cr_is_refused_future_generation(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    settle(worker)
    writes, reads = len(store.puts), store.gets
    verdict = worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=2**53 + 1), timeout=WAIT)
    assert (verdict.kind, verdict.rule) == (VerdictKind.REFUSED, "FutureGeneration")
    assert (len(store.puts), store.gets) == (writes, reads + 1)
    assert worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=1), timeout=WAIT).kind is (
        VerdictKind.ACCEPTED
    )


def test_a_report_ahead_of_the_watch_while_the_cr_cannot_be_read_is_retried(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    settle(worker)
    store.faults["get"] = [error_for("503", status=503)]
    with pytest.raises(WorkerError, match="cannot read the addon CR"):
        worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=2), timeout=WAIT)
    verdict = worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=1), timeout=WAIT)
    assert verdict.kind is VerdictKind.ACCEPTED


def _kept(store: FakeAddonStore) -> dict[str, Any] | None:
    """The acm bookkeeping as stored (None: no document)."""
    found = store.fake.stored(CONFIG_MAP, NAMESPACE, config_map_name(NAME))
    text = ((found or {}).get("data") or {}).get(KEY)
    return json.loads(text) if text else None


def test_in_the_acm_profile_a_rejected_write_puts_the_bookkeeping_back_too(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    """The ConfigMap is written before the CR: a rollback that left it would resume the
    rejected change at the next read (a rejection, a restart, a new leader)."""
    worker = make_worker(config=Config.create(profile=ACM))
    boot(worker, collectors=(MC,))
    before = _kept(store)
    stored = store.status
    store.faults["replace_status"] = [_invalid()]
    with pytest.raises(StatusRejectedError, match=r"status\.x: Invalid"):
        worker.submit(report(R.UPDATE_FAILURE, MC), timeout=WAIT)
    assert _kept(store) == before
    assert store.status == stored
    assert worker.submit(report(R.UPDATE_FAILURE, MC), timeout=WAIT).kind is VerdictKind.ACCEPTED
    kept = _kept(store)
    assert kept is not None
    assert collector(kept, MC)["state"] == "Degraded"
