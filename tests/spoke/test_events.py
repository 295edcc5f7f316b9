"""Kubernetes Events: their words come from the core's changes, a move to Degraded or into
staleness is a Warning, and recording never blocks the worker (a full queue drops, a failing
API is counted)."""

from __future__ import annotations

import threading
from datetime import timedelta

from controller.kube.api import KubeError
from controller.spoke.addon import EventRecord
from controller.spoke.events import ADDON_CHANGED, COLLECTOR_CHANGED, EventRecorder, records_for
from statemachines import Config, Report, Settings, apply, start
from statemachines.core import advance
from statemachines.vocabulary import ACM, Reason
from tests.clock import T0
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import MC, UWL, WAIT

CONFIG = Config.create(settings=Settings.model_validate({"reportInterval": "1m"}))


def test_a_move_and_the_addons_change_are_named() -> None:
    state = start(CONFIG, T0)
    outcome = apply(state, Report(Reason.UPDATE_FAILURE, None, "rollout failed"), T0, config=CONFIG)
    records = records_for(outcome, state, T0, uid="u", profile=CONFIG.profile)
    assert [r.reason for r in records] == [COLLECTOR_CHANGED, COLLECTOR_CHANGED, ADDON_CHANGED]
    assert records[0].message == (
        f"{MC}: Progressing (no reason) -> Degraded (UpdateFailure) (by report)"
    )
    assert records[-1].message.startswith(
        "Progressing (UpdateSuccessful) -> Degraded (UpdateFailure)"
    )
    assert {r.type for r in records} == {"Warning"}
    assert {r.uid for r in records} == {"u"}


def test_staleness_is_a_warning_and_recovery_is_normal() -> None:
    state = start(CONFIG, T0)
    later = T0 + timedelta(minutes=3)
    stale = advance(state, later, config=CONFIG)
    assert {r.type for r in records_for(stale, state, later, uid=None, profile=CONFIG.profile)} == {
        "Warning"
    }
    back = apply(stale.state, Report(Reason.FORWARD_SUCCESSFUL, UWL), later, config=CONFIG)
    kinds = {
        r.reason: r.type
        for r in records_for(back, stale.state, later, uid=None, profile=CONFIG.profile)
    }
    assert kinds[COLLECTOR_CHANGED] == "Normal"


def record(n: int) -> EventRecord:
    return EventRecord(reason=COLLECTOR_CHANGED, message=f"m{n}", type="Normal", at=T0)


def test_the_recorder_sends_in_order_and_counts_failures() -> None:
    store = FakeAddonStore()
    store.faults["record_event"] = [KubeError("500")]
    results: list[str] = []
    recorder = EventRecorder(store, on_result=results.append)
    recorder.start()
    recorder.record([record(1), record(2), record(3)])
    recorder.stop(WAIT)
    assert [e.message for e in store.events] == ["m2", "m3"]
    assert results == ["failed", "recorded", "recorded"]


def test_an_unexpected_error_does_not_end_the_recorder() -> None:
    store = FakeAddonStore()
    store.faults["record_event"] = [ValueError("a bug in building the Event")]
    results: list[str] = []
    recorder = EventRecorder(store, on_result=results.append)
    recorder.start()
    recorder.record([record(1), record(2)])
    recorder.stop(WAIT)
    assert [e.message for e in store.events] == ["m2"]
    assert results == ["failed", "recorded"]


def test_a_full_queue_drops_instead_of_blocking() -> None:
    release = threading.Event()
    sent = threading.Event()

    class Slow(FakeAddonStore):
        def record_event(self, r: EventRecord) -> str:
            sent.set()
            release.wait(WAIT)
            return super().record_event(r)

    slow = Slow()
    results: list[str] = []
    recorder = EventRecorder(slow, capacity=1, on_result=results.append)
    recorder.start()
    recorder.record([record(1)])
    assert sent.wait(WAIT)  # the thread holds record 1; the queue is empty again
    recorder.record([record(2), record(3)])  # 2 fills the queue, 3 is dropped
    assert results == ["dropped"]
    release.set()
    recorder.stop(WAIT)
    assert [e.message for e in slow.events] == ["m1", "m2"]


def test_acm_profile_events_use_acm_reason_names() -> None:
    """Issue item: under `--profile acm` CollectorStateChanged Events used the seed's names."""
    config = Config.create(profile=ACM, collectors=[MC])
    state = start(config, T0)
    outcome = apply(state, Report(Reason.UPDATE_FAILURE, None, "rollout failed"), T0, config=config)
    [moved, _addon] = records_for(outcome, state, T0, uid="u", profile=config.profile)
    assert moved.message == f"{MC}: Progressing (no reason) -> Degraded (UpdateFailed) (by report)"
