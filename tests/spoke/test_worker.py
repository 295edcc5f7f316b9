"""The reconcile worker against the in-memory store: one write per visible change and none for
heartbeats or refusals, timers that fire on the injected clock, a restart that resumes an open
window, the CR's generation followed, other writers' changes survived, hooks, Events, metrics,
and the CR deleted or created anew. A caller's report and leadership: test_worker_reports.py."""

import threading
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import NotFoundError, WatchEvent
from controller.spoke.addon import EventRecord
from controller.spoke.errors import SubmitTimeoutError
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.worker import Worker
from statemachines import Config, Settings, VerdictKind
from tests.clock import T0, FakeClock
from tests.names import R
from tests.spoke.conftest import WorkerFactory
from tests.spoke.fakes import FakeAddonStore, addon_object
from tests.spoke.support import (
    MC,
    WAIT,
    boot,
    collector,
    condition_of,
    ready,
    report,
    settle,
    true_type,
)
from tests.support import eventually


def test_start_writes_the_initial_status_once(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    settle(worker)
    settle(worker)
    assert len(store.puts) == 1
    assert true_type(store.status) == "Progressing"
    assert condition_of(store.status, "MetricsCollectorStatus")["reason"] == "NoReportYet"


def test_a_status_already_right_is_not_written_again(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    settle(make_worker())
    settle(make_worker())  # a second start on the same CR
    assert len(store.puts) == 1


def test_one_write_per_visible_change_none_for_heartbeats_and_refusals(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    settle(worker)
    boot(worker)
    assert len(store.puts) == 1 + 3
    assert true_type(store.status) == "Available"

    heartbeat = worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    refused = worker.submit(report(R.NOT_SUPPORTED, None), timeout=WAIT)
    settle(worker)
    assert (heartbeat.kind, refused.kind) == (VerdictKind.HEARTBEAT, VerdictKind.REFUSED)
    assert len(store.puts) == 4


def test_update_failure_blocks_available(make_worker: WorkerFactory, store: FakeAddonStore) -> None:
    worker = make_worker()
    boot(worker)
    worker.submit(report(R.UPDATE_FAILURE, None, message="rollout failed"), timeout=WAIT)
    verdict = worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(worker)
    assert verdict.kind is VerdictKind.REFUSED and verdict.rule
    assert true_type(store.status) == "Degraded"
    assert condition_of(store.status, "Degraded")["reason"] == "UpdateFailure"


def test_dampening_window_fires_at_its_deadline_without_a_report(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    worker = make_worker()
    boot(worker)
    clock.move(minutes=1)
    pending = worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    assert pending.kind is VerdictKind.PENDING
    assert pending.deadline == T0 + timedelta(minutes=11)
    clock.move(minutes=9, seconds=59)
    settle(worker)
    assert true_type(store.status) == "Available"
    clock.move(seconds=1)
    settle(worker)
    assert true_type(store.status) == "Degraded"
    mc = condition_of(store.status, "MetricsCollectorStatus")
    assert (mc["reason"], mc["lastTransitionTime"]) == ("ForwardFailure", "2025-01-01T12:11:00Z")


def test_a_flap_shorter_than_the_window_is_absorbed(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    worker = make_worker()
    boot(worker)
    available_since = condition_of(store.status, "Available")["lastTransitionTime"]
    clock.move(minutes=1)
    worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    clock.move(minutes=2)
    worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    clock.move(minutes=10)
    settle(worker)
    assert true_type(store.status) == "Available"
    assert condition_of(store.status, "Available")["lastTransitionTime"] == available_since
    assert "pendingSince" not in collector(store.status, MC)


def test_the_worker_wakes_itself_when_a_window_ends(store: FakeAddonStore) -> None:
    """No tick, a real clock, a short window: the worker's wait on its queue ends on time."""
    config = Config.create(settings=Settings.model_validate({"degradeAfter": "200ms"}))
    worker = Worker(store, config, metrics=ControllerMetrics(CollectorRegistry()))
    worker.start()
    try:
        boot(worker)
        worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
        eventually(
            lambda: true_type(store.status) == "Degraded", "the window to fire", timeout=WAIT
        )
    finally:
        worker.stop(WAIT)


def test_a_restart_inside_the_window_fires_it_on_time(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    first = make_worker()
    boot(first)
    clock.move(minutes=1)
    first.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    settle(first)
    first.stop(WAIT)
    assert collector(store.status, MC)["pendingSince"].startswith("2025-01-01T12:01:00")

    clock.move(minutes=5)
    second = make_worker()
    settle(second)
    assert true_type(store.status) == "Available"
    clock.move(minutes=5)
    settle(second)
    assert true_type(store.status) == "Degraded"
    mc = condition_of(store.status, "MetricsCollectorStatus")
    assert (mc["lastTransitionTime"], mc["message"]) == ("2025-01-01T12:11:00Z", "503")


def test_a_collector_nobody_hears_of_goes_stale(
    make_worker: WorkerFactory, store: FakeAddonStore, clock: FakeClock
) -> None:
    worker = make_worker()
    boot(worker)
    clock.move(minutes=15)
    settle(worker)
    assert condition_of(store.status, "MetricsCollectorStatus")["status"] == "Unknown"
    assert condition_of(store.status, "Degraded")["reason"] == "ReportsStale"


def test_the_conditions_follow_the_crs_generation(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    writes = len(store.puts)
    worker.observe(WatchEvent("MODIFIED", store.change_spec({"interval": 60})))
    settle(worker)
    assert len(store.puts) == writes + 1
    assert {c["observedGeneration"] for c in store.status["conditions"]} == {2}


def test_a_report_of_an_outdated_generation_is_refused(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    for interval in (60, 120):  # the CR at generation 3
        worker.observe(WatchEvent("MODIFIED", store.change_spec({"interval": interval})))
    worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=3), timeout=WAIT)
    settle(worker)
    writes = len(store.puts)
    verdict = worker.submit(report(R.UPDATE_FAILURE, None, generation=2), timeout=WAIT)
    settle(worker)
    assert (verdict.kind, verdict.rule) == (VerdictKind.REFUSED, "OutdatedGeneration")
    assert len(store.puts) == writes


def test_a_report_of_a_future_generation_does_not_lock_out_the_real_one(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    """The worker side of FutureGeneration: a report claiming a generation the CR does not have
    is refused and writes nothing; the CR's own generation is still judged afterwards."""
    worker = make_worker()
    boot(worker)
    writes = len(store.puts)
    verdict = worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=2**53 + 1), timeout=WAIT)
    settle(worker)
    assert (verdict.kind, verdict.rule) == (VerdictKind.REFUSED, "FutureGeneration")
    assert len(store.puts) == writes
    verdict = worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=1), timeout=WAIT)
    assert verdict.kind is VerdictKind.ACCEPTED
    settle(worker)
    assert {c["observedGeneration"] for c in store.status["conditions"]} == {1}


def test_another_writers_change_to_our_status_is_repaired_theirs_kept(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    foreign = {
        "type": "ExternalCheck",
        "status": "True",
        "reason": "Fine",
        "message": "",
        "lastTransitionTime": "2025-01-01T00:00:00Z",
    }

    def clobber(status: dict[str, Any]) -> None:
        status["conditions"] = [foreign, *status["conditions"][1:]]  # Available dropped

    worker.observe(WatchEvent("MODIFIED", store.change_status(clobber)))
    settle(worker)
    assert true_type(store.status) == "Available"
    assert store.status["conditions"][0] == foreign


def test_the_echo_of_our_own_write_costs_no_call(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    reads, writes = store.gets, len(store.puts)
    worker.observe(WatchEvent("MODIFIED", store.get()))
    settle(worker)
    assert (store.gets, len(store.puts)) == (reads + 1, writes)  # the test's own get only


def test_an_event_older_than_our_write_costs_a_read_not_a_write(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    settle(worker)
    old = store.get()
    boot(worker)
    writes = len(store.puts)
    old["metadata"]["resourceVersion"] = "1"  # as delivered late by a watch
    worker.observe(WatchEvent("MODIFIED", old))
    settle(worker)
    assert len(store.puts) == writes


def test_a_conflict_is_retried_on_a_fresh_read_and_loses_nothing(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    raced = threading.Event()

    def racing_writer(s: FakeAddonStore) -> None:
        if not raced.is_set():
            raced.set()
            s.change_status(lambda st: st["conditions"].append({"type": "Foreign", "x": 1}))

    store.before_replace = racing_writer
    worker.submit(report(R.UPDATE_FAILURE, None, message="broken"), timeout=WAIT)
    settle(worker)
    assert store.conflicts == 1
    assert true_type(store.status) == "Degraded"
    assert {"type": "Foreign", "x": 1} in store.status["conditions"]


def test_hooks_see_every_written_status_and_a_failing_hook_is_contained(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    seen: list[dict[str, Any]] = []

    def broken(status: dict[str, Any]) -> None:
        raise RuntimeError("hook bug")

    settle(worker)  # the initial write
    worker.on_status_written += [broken, seen.append]
    boot(worker)
    assert len(seen) == 3 and len(store.puts) == 4
    assert seen[-1] == store.status


def test_events_name_each_move_and_the_addons_change(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    recorded: list[EventRecord] = []
    worker = make_worker(record_events=recorded.extend)
    boot(worker)
    reasons = [r.reason for r in recorded]
    assert reasons.count("CollectorStateChanged") == 4  # two by the operator, one each
    assert reasons[-1] == "AddonStatusChanged"
    assert recorded[-1].message.startswith("Progressing (UpdateSuccessful) -> Available")
    assert all(r.uid == "uid-1" for r in recorded)
    before = len(recorded)
    worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(worker)
    assert len(recorded) == before  # a heartbeat is no news


def test_the_deleted_cr_is_written_again_once_it_is_back(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    kept = store.get()
    store.delete()
    worker.observe(WatchEvent("DELETED", {}))
    with pytest.raises(SubmitTimeoutError):  # not on a CR, so not accepted
        worker.submit(report(R.UPDATE_FAILURE, None), timeout=0.2)
    settle(worker)
    assert not ready(worker)
    store.obj = kept
    worker.observe(WatchEvent("ADDED", store.get()))
    settle(worker)
    assert true_type(store.status) == "Degraded" and ready(worker)


def test_a_cr_created_anew_starts_its_machines_over(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    boot(worker)
    fresh = addon_object()
    fresh["metadata"]["uid"] = "uid-2"
    store.obj = fresh
    worker.observe(WatchEvent("ADDED", store.get()))
    settle(worker)
    assert true_type(store.status) == "Progressing"
    assert collector(store.status, MC)["state"] == "Progressing"


def test_start_fails_clearly_without_the_cr(config: Config) -> None:
    metrics = ControllerMetrics(CollectorRegistry())
    with pytest.raises(NotFoundError):
        Worker(FakeAddonStore(obj=None), config, metrics=metrics).start()


def test_a_stored_field_out_of_bounds_is_absent_logged_once_and_counted(
    config: Config, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/spec.md §6, what is read back is checked: the worker starts, the field is absent,
    one warning names it, the metric counts it; the next write replaces it."""
    window = {"name": MC, "state": "Available", "reason": "ForwardSuccessful"}
    window |= {"pendingReason": "ForwardFailure", "pendingSince": "9999-12-31T23:59:59Z"}
    store = FakeAddonStore(obj=addon_object(status={"collectors": [window]}))
    registry = CollectorRegistry()
    worker = Worker(store, config, metrics=ControllerMetrics(registry))
    worker.start()
    try:
        settle(worker)
        assert worker.state.collector(MC).pending is None
        told = [r for r in caplog.records if r.getMessage().startswith("a stored field")]
        assert [r.field for r in told] == ["status.collectors[0].pendingSince"]  # type: ignore[attr-defined]
        ignored = "addon_status_stored_fields_ignored_total"
        assert registry.get_sample_value(ignored, {"field": "collectors"}) == 1
        assert "pendingSince" not in collector(store.status, MC)
    finally:
        worker.stop()


def test_metrics_show_states_moves_refusals_and_writes(make_worker: WorkerFactory) -> None:
    registry = CollectorRegistry()
    worker = make_worker(metrics=ControllerMetrics(registry))
    settle(worker)  # the initial write on its own (else the first report's carries it)
    boot(worker)
    worker.submit(report(R.NOT_SUPPORTED, None), timeout=WAIT)
    settle(worker)

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("addon_status_collector_state", collector=MC, state="Available") == 1
    assert value("addon_status_collector_state", collector=MC, state="Progressing") == 0
    moved = {"collector": MC, "from": "Progressing", "to": "Available", "cause": "report"}
    assert value("addon_status_collector_transitions_total", **moved) == 1
    refused = {"collector": "all", "reason": "NotSupported", "rule": "NoTransition"}
    assert value("addon_status_reports_refused_total", **refused) == 1
    assert value("addon_status_status_writes_total") == 4
    assert value("addon_status_reconcile_duration_seconds_count", trigger="report") == 4
    assert value("addon_status_queue_depth") == 0
