"""The work queue keeps client-go's promises (controller/kube/workqueue.py), on a clock the test
moves."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.backoff import Backoff
from controller.kube.ratelimit import Bucket, ItemBackoff, MaxOf
from controller.kube.workqueue import WorkQueue
from controller.ops.metrics import WorkQueueMetrics
from tests.clock import FakeClock


def queue(clock: FakeClock, backoff: Backoff | None = None) -> WorkQueue[str]:
    limiter = ItemBackoff[str](backoff) if backoff else None
    return WorkQueue(clock=clock.monotonic, rate_limiter=limiter)


def test_a_key_added_twice_is_handed_out_once() -> None:
    q = queue(FakeClock())
    q.add("a"), q.add("b"), q.add("a")
    assert [q.get(0), q.get(0), q.get(0)] == ["a", "b", None]


def test_a_key_added_while_processed_comes_back_after_done_and_never_twice_at_once() -> None:
    q = queue(FakeClock())
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    assert q.get(0) is None  # not handed to a second worker while the first holds it
    q.done("a")
    assert q.get(0) == "a"
    q.done("a")
    assert q.get(0) is None


def test_add_after_waits_for_the_clock_and_the_earlier_time_wins() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("a", 10)
    q.add_after("a", 30)
    q.add_after("b", 20)
    assert q.get(0) is None
    clock.move(seconds=10)
    assert q.get(0) == "a"
    clock.move(seconds=10)
    assert q.get(0) == "b"
    clock.move(seconds=50)
    assert q.get(0) is None  # a's later time was superseded, not kept


def test_a_key_waiting_for_later_has_one_entry_however_often_it_is_moved_earlier() -> None:
    clock = FakeClock()
    q = queue(clock)
    for delay in range(10_000, 0, -1):  # each time earlier: client-go moves its one entry
        q.add_after("a", delay)
    assert len(q._heap) == 1
    clock.move(seconds=1)
    assert q.get(0) == "a"
    q.done("a")
    clock.move(seconds=10_000)
    assert q.get(0) is None  # the entries it replaced are gone, not merely superseded


def test_a_key_ready_now_is_not_held_back_by_a_later_time() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("a", 10)
    q.add("a")
    assert q.get(0) == "a"


def test_rate_limited_retries_grow_per_key_until_forgotten() -> None:
    clock = FakeClock()
    q = queue(clock, Backoff(initial=1.0, maximum=1e9))
    ceilings = []
    for _ in range(5):
        delay = q.add_rate_limited("a")
        ceilings.append(delay)
        assert delay <= 2.0 ** (q.requeues("a") - 1)  # full jitter below the doubling ceiling
    assert q.requeues("a") == 5 and q.requeues("b") == 0
    q.forget("a")
    assert q.requeues("a") == 0
    q.add("b")
    assert q.get(0) == "b"  # another key is not held up by a's backoff


def test_retry_after_is_a_floor_of_the_rate_limited_delay() -> None:
    q = queue(FakeClock(), Backoff(initial=0.001, maximum=0.002))
    assert q.add_rate_limited("a", retry_after=30.0) >= 30.0


def test_the_bucket_spreads_a_burst_of_failing_keys_at_its_rate() -> None:
    clock = FakeClock()
    limiter = MaxOf[str](
        ItemBackoff(Backoff(initial=0.001, maximum=0.001)), Bucket(10, 100, clock=clock.monotonic)
    )
    q = WorkQueue(clock=clock.monotonic, rate_limiter=limiter)
    delays = [q.add_rate_limited(f"k{i}") for i in range(300)]
    assert max(delays[:100]) <= 0.001  # the burst
    assert delays[199] == pytest.approx(10.0) and delays[299] == pytest.approx(20.0)  # then 10/s
    clock.move(seconds=60)
    assert q.add_rate_limited("late") <= 0.001  # refilled meanwhile


def test_client_gos_metrics_count_adds_waits_work_and_retries() -> None:
    clock, registry = FakeClock(), CollectorRegistry()
    q: WorkQueue[str] = WorkQueue(
        clock=clock.monotonic, metrics=WorkQueueMetrics(registry).queue("mirror")
    )

    def value(name: str) -> float:
        found = registry.get_sample_value(name, {"name": "mirror"})
        assert found is not None, name
        return found

    q.add("a"), q.add("a"), q.add("b")
    assert value("workqueue_adds_total") == 2 and value("workqueue_depth") == 2
    clock.move(seconds=3)
    assert q.get(0) == "a"
    assert value("workqueue_queue_duration_seconds_sum") == 3.0
    clock.move(seconds=2)
    assert value("workqueue_unfinished_work_seconds") == 2.0
    assert value("workqueue_longest_running_processor_seconds") == 2.0
    q.done("a")
    assert value("workqueue_work_duration_seconds_sum") == 2.0
    assert value("workqueue_unfinished_work_seconds") == 0.0 and value("workqueue_depth") == 1
    q.add_rate_limited("c")
    assert value("workqueue_retries_total") == 1


def test_a_waiting_woken_get_sees_the_moved_clock() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("a", 60)
    got: list[str | None] = []
    taker = threading.Thread(target=lambda: got.append(q.get(30)))
    taker.start()
    clock.move(seconds=60)
    q.wake()
    taker.join(30)
    assert got == ["a"]


def test_shut_down_with_drain_hands_out_what_is_queued_then_none() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add("a"), q.add("b"), q.add_after("later", 5)
    q.shut_down(drain=True)
    q.add("c")  # refused once shutting down
    assert [q.get(), q.get(), q.get()] == ["a", "b", None]


def test_shut_down_without_drain_answers_none_at_once_and_frees_a_waiting_get() -> None:
    q = queue(FakeClock())
    got: list[str | None] = ["unset"]
    taker = threading.Thread(target=lambda: got.__setitem__(0, q.get()))
    taker.start()
    q.add("a")
    taker.join(30)
    q.add("b")
    q.shut_down()
    assert got == ["a"] and q.get() is None


def test_idle_means_nothing_ready_and_nothing_in_progress() -> None:
    clock = FakeClock()
    q = queue(clock)
    q.add_after("later", 5)
    assert q.idle()
    q.add("a")
    assert not q.idle()
    assert q.get(0) == "a"
    assert not q.idle() and not q.wait_idle(0)
    q.done("a")
    assert q.idle() and q.wait_idle(0)


def test_a_shut_down_queue_reopened_takes_keys_again() -> None:
    q = queue(FakeClock())
    q.add("a")
    q.shut_down()
    q.add("b")
    assert q.get() is None
    q.reopen()
    q.add("c")
    assert q.get(0) == "c"
