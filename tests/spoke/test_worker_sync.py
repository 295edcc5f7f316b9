"""The worker's one sync (on the in-memory store): everything waiting is applied and written
once, each report answered once the CR holds it; a rejected write of several reports narrows
down to the report the API server refuses; a report ahead of the watch costs one read a sync,
however many there are; between syncs the worker waits for the machines' next deadline and
nothing else."""

from __future__ import annotations

import json
import threading
from concurrent.futures import Future
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import error_for
from controller.spoke.errors import StatusRejectedError, WorkerError
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.worker import Worker
from statemachines import Report, Verdict, VerdictKind
from tests.clock import FakeClock
from tests.names import R
from tests.spoke.conftest import WorkerFactory
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import (
    MC,
    UWL,
    WAIT,
    boot,
    condition_of,
    hold_writes,
    report,
    settle,
    true_type,
)
from tests.support import eventually


class ValidatingStore(FakeAddonStore):
    """An API server whose schema refuses a status carrying `poison` (as a CRD's validation
    rule would refuse a value)."""

    def replace_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        if "poison" in json.dumps(obj.get("status")):
            raise error_for("status.conditions[0].message: Invalid value: poison", status=422)
        return super().replace_status(obj)


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


def _waiting(registry: CollectorRegistry, count: int) -> None:
    depth = "addon_status_queue_depth"
    eventually(lambda: registry.get_sample_value(depth) == count, f"{count} items waiting")


def test_a_burst_of_reports_costs_one_write_and_each_is_answered_once_it_is_on_the_cr(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    registry = CollectorRegistry()
    worker = make_worker(metrics=ControllerMetrics(registry))
    boot(worker)
    writes = len(store.puts)
    entered, release = hold_writes(store)
    first = _submit(worker, report(R.UPDATE_FAILURE, None, message="rollout failed"))
    assert entered.wait(WAIT)  # the sync is inside the write of the first report
    burst = [
        _submit(worker, report(R.UPDATE_SUCCESSFUL, None, message="rolled out")),
        _submit(worker, report(R.FORWARD_FAILURE, MC, message="503")),
        _submit(worker, report(R.UPDATE_SUCCESSFUL, UWL, message="rolled out")),
    ]
    _waiting(registry, 3)
    assert not any(answer.done() for answer in [first, *burst])  # nothing before its write
    release.set()
    assert first.result(WAIT).kind is VerdictKind.ACCEPTED
    kinds = [answer.result(WAIT).kind for answer in burst]
    assert kinds == [VerdictKind.ACCEPTED, VerdictKind.ACCEPTED, VerdictKind.HEARTBEAT]
    assert len(store.puts) == writes + 2  # the first report's write, then the burst's one
    assert true_type(store.status) == "Degraded"
    assert condition_of(store.status, "Degraded")["reason"] == "ForwardFailure"


POISONED = report(R.UPDATE_FAILURE, None, message="poison")
GOOD = report(R.DISABLED_METRICS, UWL, message="switched off")


def _together(
    worker: Worker, store: ValidatingStore, registry: CollectorRegistry, attempt: int
) -> list[Future[Verdict]]:
    """The poisoned report and a good one, waiting for the same write (behind a held one)."""
    entered, release = hold_writes(store)
    held = _submit(worker, report(R.UPDATE_SUCCESSFUL, None, message=f"rolled out {attempt}"))
    assert entered.wait(WAIT)
    answers = [_submit(worker, POISONED), _submit(worker, GOOD)]
    _waiting(registry, 2)
    release.set()
    assert held.result(WAIT).kind in (VerdictKind.ACCEPTED, VerdictKind.HEARTBEAT)
    return answers


def _sent_back(answers: list[Future[Verdict]]) -> None:
    """One write carried both: nobody can tell which one it was; each is to send again."""
    for answer in answers:
        with pytest.raises(WorkerError) as caught:
            answer.result(WAIT)
        assert not isinstance(caught.value, StatusRejectedError)


def test_a_rejected_write_of_several_reports_narrows_down_to_the_one_refused(
    make_worker: WorkerFactory,
) -> None:
    store = ValidatingStore()
    registry = CollectorRegistry()
    worker = make_worker(store=store, metrics=ControllerMetrics(registry))
    boot(worker, collectors=(MC,))
    stored = store.status
    _sent_back(_together(worker, store, registry, 1))
    assert store.status["conditions"] != stored["conditions"]  # the held report's write
    poisoned, good = _together(worker, store, registry, 2)  # now each in a write of its own
    with pytest.raises(StatusRejectedError, match="poison"):
        poisoned.result(WAIT)
    assert good.result(WAIT).kind is VerdictKind.ACCEPTED
    assert "poison" not in json.dumps(store.status)


def test_a_report_sent_back_waits_for_a_write_of_its_own_without_holding_up_the_rest(
    make_worker: WorkerFactory,
) -> None:
    store = ValidatingStore()
    registry = CollectorRegistry()
    worker = make_worker(store=store, metrics=ControllerMetrics(registry))
    boot(worker, collectors=(MC,))
    _sent_back(_together(worker, store, registry, 1))
    store.faults["replace_status"] = [error_for("503", status=503) for _ in range(1000)]
    waits = _submit(worker, report(R.UPDATE_SUCCESSFUL, None, message="rolled out again"))
    eventually(lambda: len(store.faults["replace_status"]) < 1000, "its write to fail")
    poisoned = _submit(worker, POISONED)  # a change waits to be written: not with that one
    ahead = report(R.UPDATE_SUCCESSFUL, None, generation=2**53 + 1)
    refused = worker.submit(ahead, timeout=WAIT)  # behind it in the inbox, answered at once
    assert (refused.kind, refused.rule) == (VerdictKind.REFUSED, "FutureGeneration")
    assert not waits.done() and not poisoned.done()
    store.faults["replace_status"] = []
    settle(worker)  # the write is tried now, not after its backoff
    assert waits.result(WAIT).kind in (VerdictKind.ACCEPTED, VerdictKind.HEARTBEAT)
    with pytest.raises(StatusRejectedError, match="poison"):
        poisoned.result(WAIT)


def test_reports_ahead_of_the_watch_cost_one_read_a_sync(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    registry = CollectorRegistry()
    worker = make_worker(metrics=ControllerMetrics(registry))
    boot(worker)
    entered, release = hold_writes(store)
    held = _submit(worker, report(R.UPDATE_FAILURE, None))
    assert entered.wait(WAIT)
    ahead = [_submit(worker, report(R.UPDATE_SUCCESSFUL, None, generation=g)) for g in (5, 6, 7)]
    _waiting(registry, 3)
    reads = store.gets
    release.set()
    assert held.result(WAIT).kind is VerdictKind.ACCEPTED
    for answer in ahead:
        verdict = answer.result(WAIT)
        assert (verdict.kind, verdict.rule) == (VerdictKind.REFUSED, "FutureGeneration")
    assert store.gets == reads + 1


def test_between_syncs_the_worker_waits_for_the_machines_next_deadline_only(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    worker = make_worker()
    boot(worker)
    key = str(store.ref)
    # Staleness (three report intervals of 5 minutes) is the next deadline: nothing before.
    assert worker.loop.queue.due_in(key) == pytest.approx(15 * 60, abs=5)
    clock.move(minutes=1)
    pending = worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    assert pending.kind is VerdictKind.PENDING  # the window: 10 minutes from now
    assert worker.loop.queue.due_in(key) == pytest.approx(10 * 60, abs=5)
    assert worker.loop.queue.idle()  # nothing else is queued meanwhile


def test_a_write_that_fails_is_tried_again_after_the_loops_backoff_not_in_a_loop(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    store.faults["replace_status"] = [error_for("503", status=503) for _ in range(3)]
    verdict = worker.submit(report(R.UPDATE_FAILURE, None), timeout=WAIT)
    assert verdict.kind is VerdictKind.ACCEPTED
    assert worker.loop.queue.requeues(str(store.ref)) == 0  # forgotten once written
    assert true_type(store.status) == "Degraded"
