"""The reconcile worker and a caller's report, against the in-memory store: accepted only once
the CR holds it, either judged or withdrawn and never applied behind the caller's back,
leadership honoured (the election's verdict and a lapsing Lease), a full queue and a stopped
worker turning reports away."""

import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import KubeError
from controller.spoke.errors import (
    NotLeaderError,
    QueueFullError,
    SubmitTimeoutError,
    WorkerStoppedError,
)
from controller.spoke.metrics import ControllerMetrics
from statemachines import Config, VerdictKind
from tests.clock import FakeClock
from tests.names import R
from tests.spoke.conftest import WorkerFactory
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import (
    MC,
    WAIT,
    boot,
    hold_writes,
    ready,
    report,
    settle,
    submit_in_background,
    true_type,
)
from tests.support import eventually


def test_accepted_means_persisted_a_failed_write_is_retried_before_the_answer(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    store.faults["replace_status"] = [KubeError("503 unavailable", status=503)]
    verdict = worker.submit(report(R.UPDATE_FAILURE, None), timeout=WAIT)
    assert verdict.kind is VerdictKind.ACCEPTED
    assert true_type(store.status) == "Degraded"  # already on the CR when the answer came


def test_a_verdict_waits_for_the_write_that_carries_it(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    entered, release = hold_writes(store)
    caller, answers = submit_in_background(worker, report(R.UPDATE_FAILURE, None))
    try:
        assert entered.wait(WAIT)
        time.sleep(0.05)  # room for a wrong early answer to show
        assert answers == []
    finally:
        release.set()
        caller.join(WAIT)
    assert answers == [VerdictKind.ACCEPTED]
    assert true_type(store.status) == "Degraded"


def test_a_report_that_cannot_be_persisted_times_out_and_its_repeat_is_judged_again(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    store.faults["replace_status"] = [KubeError("503", status=503) for _ in range(1000)]
    with pytest.raises(SubmitTimeoutError, match="not on the addon CR"):
        worker.submit(report(R.UPDATE_FAILURE, None, message="broken"), timeout=0.3)
    assert true_type(store.status) == "Available"  # nothing was called accepted
    store.faults["replace_status"] = []
    repeat = worker.submit(report(R.UPDATE_FAILURE, None, message="broken"), timeout=WAIT)
    assert repeat.kind in (VerdictKind.ACCEPTED, VerdictKind.HEARTBEAT)
    assert true_type(store.status) == "Degraded"


def test_leadership_lost_before_the_write_answers_not_leader(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    store.faults["replace_status"] = [KubeError("503", status=503) for _ in range(1000)]
    errors: list[BaseException] = []

    def send() -> None:
        try:
            worker.submit(report(R.UPDATE_FAILURE, None), timeout=WAIT)
        except NotLeaderError as error:
            errors.append(error)

    caller = threading.Thread(target=send)
    caller.start()
    eventually(
        lambda: worker.state.collectors[0].reason is R.UPDATE_FAILURE, "the judgement", timeout=WAIT
    )
    worker.set_leader(False)
    caller.join(WAIT)
    assert len(errors) == 1 and "send the report again" in str(errors[0])
    assert true_type(store.status) == "Available"


def test_a_lapsed_lease_stops_writes_and_reports_until_it_is_renewed(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    held = threading.Event()
    held.set()
    worker = make_worker(lease_held=held.is_set)
    boot(worker)
    clock.move(minutes=1)
    worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    held.clear()  # the renew deadline passed; the election has not said so yet
    assert not worker.leading
    with pytest.raises(NotLeaderError):
        worker.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=WAIT)
    writes = len(store.puts)
    clock.move(minutes=10)
    settle(worker)  # the window ends, but the write waits for the Lease
    assert len(store.puts) == writes and true_type(store.status) == "Available"
    held.set()
    eventually(
        lambda: true_type(store.status) == "Degraded", "the write after the renewal", timeout=WAIT
    )


def test_a_bug_in_one_item_does_not_kill_the_worker(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    store.faults["get"] = [RuntimeError("a bug")]
    worker.submit(report(R.UPDATE_FAILURE, None), timeout=WAIT)
    eventually(
        lambda: true_type(store.status) == "Degraded", "the write after the bug", timeout=WAIT
    )
    assert worker.alive


def test_a_follower_neither_judges_nor_writes(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker(leader=False)
    settle(worker)
    with pytest.raises(NotLeaderError):
        worker.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=WAIT)
    assert store.puts == []
    assert not ready(worker)


def test_a_new_leader_resumes_from_the_cr(
    make_worker: WorkerFactory, store: FakeAddonStore, config: Config, clock: FakeClock
) -> None:
    old = make_worker()
    boot(old)
    follower = make_worker(leader=False)
    old.submit(report(R.UPDATE_FAILURE, None, message="broken"), timeout=WAIT)
    settle(old)
    old.set_leader(False)
    follower.set_leader(True)
    settle(follower)
    assert ready(follower)
    verdict = follower.submit(report(R.FORWARD_SUCCESSFUL, MC), timeout=WAIT)
    assert verdict.kind is VerdictKind.REFUSED  # the old leader's UpdateFailure holds
    with pytest.raises(NotLeaderError):
        old.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=WAIT)


def test_a_report_not_judged_in_time_is_withdrawn(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    entered, release = hold_writes(store)
    first, answers = submit_in_background(worker, report(R.UPDATE_FAILURE, None))
    assert entered.wait(WAIT)  # the worker now hangs in PUT
    try:
        with pytest.raises(SubmitTimeoutError, match="not judged"):
            worker.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=0.05)
    finally:
        release.set()
    first.join(WAIT)
    settle(worker)
    assert answers == [VerdictKind.ACCEPTED]
    assert true_type(store.status) == "Degraded"  # the withdrawn UpdateSuccessful never ran


def test_a_full_queue_turns_reports_away(make_worker: WorkerFactory, store: FakeAddonStore) -> None:
    worker = make_worker(capacity=1)
    boot(worker)
    entered, release = hold_writes(store)
    first, _ = submit_in_background(worker, report(R.UPDATE_FAILURE, None))
    assert entered.wait(WAIT)
    filler = worker.tick()  # occupies the one place in the queue
    try:
        with pytest.raises(QueueFullError):
            worker.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=0.05)
    finally:
        release.set()
    filler.result(WAIT)
    first.join(WAIT)


def test_stop_handles_what_was_queued_before_it(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    """The work queue shuts down draining: a report queued before `stop` is judged and written
    (its caller gets its verdict), one sent after it is turned away."""
    registry = CollectorRegistry()
    worker = make_worker(metrics=ControllerMetrics(registry))
    boot(worker)
    entered, release = hold_writes(store)
    first, first_answers = submit_in_background(worker, report(R.UPDATE_FAILURE, None))
    assert entered.wait(WAIT)
    second, second_answers = submit_in_background(worker, report(R.UPDATE_SUCCESSFUL, None))
    queued = lambda: registry.get_sample_value("addon_status_queue_depth") == 1  # noqa: E731
    eventually(queued, what="the second report queued")
    stopper = threading.Thread(target=worker.stop, args=(WAIT,), daemon=True)
    stopper.start()

    def stopping() -> bool:
        tick = worker.tick()
        return tick.done() and isinstance(tick.exception(), WorkerStoppedError)

    eventually(stopping, what="stop to begin")
    with pytest.raises(WorkerStoppedError):
        worker.submit(report(R.UPDATE_FAILURE, None), timeout=WAIT)
    release.set()
    for thread in (first, second, stopper):
        thread.join(WAIT)
    assert first_answers == second_answers == [VerdictKind.ACCEPTED]
    assert true_type(store.status) == "Progressing"  # the second report's effect is written
    assert not worker.alive


def test_a_stopped_worker_takes_no_reports(make_worker: WorkerFactory) -> None:
    worker = make_worker()
    worker.stop(WAIT)
    with pytest.raises(WorkerStoppedError):
        worker.submit(report(R.UPDATE_SUCCESSFUL, None), timeout=WAIT)
    with pytest.raises(WorkerStoppedError):
        worker.tick().result(WAIT)
    assert not worker.alive
