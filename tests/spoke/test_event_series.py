"""Repeated Events correlated as client-go's recorder does (`tools/record/events_cache.go`):
an identical Event raises the count of the first one (its name and first time kept, its last
time and message new); ten distinct messages of one type and reason within ten minutes become
one combined Event, itself counted on repeats; similar Events further apart start over; the
caches are bounded; the recorder patches a repeat and creates it again when it is gone."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from controller.kube.api import KubeError
from controller.spoke.addon import EventRecord
from controller.spoke.event_series import COMBINED_PREFIX, Correlation, EventCorrelator
from controller.spoke.events import COLLECTOR_CHANGED, EventRecorder
from tests.clock import T0
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import WAIT


def move(
    message: str = "mc: Available -> Degraded", at: datetime = T0, **extra: str
) -> EventRecord:
    fields = {"reason": COLLECTOR_CHANGED, "type": "Warning", "uid": "u1", **extra}
    return EventRecord(message=message, at=at, **fields)  # type: ignore[arg-type]


def sent(correlator: EventCorrelator, record: EventRecord, name: str) -> Correlation:
    """Correlate `record` and tell the correlator the server stored it as `name`."""
    correlation = correlator.correlate(record)
    correlator.sent(correlation, name)
    return correlation


def test_a_new_event_is_created_with_count_one() -> None:
    correlation = EventCorrelator().correlate(move())
    assert not correlation.update
    assert (correlation.event.count, correlation.event.name) == (1, None)


def test_an_identical_event_raises_the_count_of_the_first() -> None:
    correlator = EventCorrelator()
    sent(correlator, move(), "addon.1")
    later = T0 + timedelta(hours=3)  # deduplication has no window, only the LRU bound
    repeat = sent(correlator, move(at=later), "addon.1")
    third = correlator.correlate(move(at=later + timedelta(seconds=1)))
    assert repeat.update and third.update
    assert (repeat.event.name, repeat.event.count, repeat.event.first_at) == ("addon.1", 2, T0)
    assert (third.event.count, third.event.at) == (3, later + timedelta(seconds=1))


@pytest.mark.parametrize(
    "other",
    [
        pytest.param({"message": "mc: Degraded -> Available"}, id="another-message"),
        pytest.param({"reason": "AddonStatusChanged"}, id="another-reason"),
        pytest.param({"type": "Normal"}, id="another-type"),
        pytest.param({"uid": "u2"}, id="another-object"),
    ],
)
def test_an_event_that_differs_is_a_new_event(other: dict[str, str]) -> None:
    correlator = EventCorrelator()
    sent(correlator, move(), "addon.1")
    message = other.pop("message", "mc: Available -> Degraded")
    assert not correlator.correlate(move(message, **other)).update


def test_the_tenth_distinct_similar_message_is_combined_and_then_counted() -> None:
    correlator = EventCorrelator()
    for n in range(9):
        assert not sent(correlator, move(f"m{n}", T0 + timedelta(minutes=n)), f"addon.{n}").update
    tenth = sent(correlator, move("m9", T0 + timedelta(minutes=9)), "addon.combined")
    assert not tenth.update
    assert tenth.event.message == COMBINED_PREFIX + "m9"
    eleventh = correlator.correlate(move("m10", T0 + timedelta(minutes=10)))
    assert eleventh.update
    assert (eleventh.event.name, eleventh.event.count) == ("addon.combined", 2)
    assert eleventh.event.message == COMBINED_PREFIX + "m10"


def test_similar_events_further_apart_than_ten_minutes_start_over() -> None:
    correlator = EventCorrelator()
    at = T0
    for n in range(9):
        sent(correlator, move(f"m{n}", at), f"addon.{n}")
    at += timedelta(minutes=10, seconds=1)
    assert not correlator.correlate(move("m9", at)).event.message.startswith(COMBINED_PREFIX)


def test_the_caches_forget_the_least_recently_used() -> None:
    correlator = EventCorrelator(cache_size=2)
    sent(correlator, move("a"), "addon.a")
    sent(correlator, move("b"), "addon.b")
    sent(correlator, move("c"), "addon.c")
    assert not correlator.correlate(move("a")).update
    assert correlator.correlate(move("c")).update


def run(store: FakeAddonStore, records: list[EventRecord]) -> list[str]:
    results: list[str] = []
    recorder = EventRecorder(store, on_result=results.append)
    recorder.start()
    recorder.record(records)
    recorder.stop(WAIT)
    return results


def test_the_recorder_patches_a_repeat_instead_of_creating_it() -> None:
    store = FakeAddonStore()
    results = run(store, [move(at=T0), move(at=T0 + timedelta(minutes=1))])
    assert results == ["recorded", "aggregated"]
    assert len(store.events) == 1
    [counted] = store.counted
    assert (counted.count, counted.first_at, counted.at) == (2, T0, T0 + timedelta(minutes=1))


def test_a_repeat_whose_event_is_gone_is_created_again_with_its_count() -> None:
    store = FakeAddonStore()
    store.fake.before["patch"] = store.delete_events  # its TTL ran out: the patch gets a 404
    results = run(store, [move(at=T0), move(at=T0 + timedelta(minutes=1))])
    assert results == ["recorded", "recorded"]
    first, again = store.events
    assert first.name is None  # the store named it
    assert (again.name, again.count, again.first_at) == (store.names[0], 2, T0)


def test_a_failed_patch_is_counted_and_not_created() -> None:
    store = FakeAddonStore()
    store.faults["count_event"] = [KubeError("500", status=500)]
    results = run(store, [move(at=T0), move(at=T0 + timedelta(minutes=1))])
    assert results == ["recorded", "failed"]
    assert len(store.events) == 1
