"""The one loop around a work queue (controller/kube/controller.py), as controller-runtime's:
what a sync's answer does to its key, a bug never ends the loop, a held loop waits to be
released, a stop drains when asked, and how long a key has been in hand."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from controller.kube.api import UnavailableError
from controller.kube.backoff import Backoff
from controller.kube.controller import Controller, Result
from controller.kube.ratelimit import ItemBackoff
from tests.clock import FakeClock
from tests.support import eventually


class Recorder:
    """A sync that records its keys and answers what the test set for each."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.answers: dict[str, Callable[[], Result | None]] = {}
        self.lock = threading.Lock()

    def __call__(self, key: str) -> Result | None:
        with self.lock:
            self.seen.append(key)
            answer = self.answers.get(key)
        return answer() if answer is not None else None

    def count(self, key: str) -> int:
        with self.lock:
            return self.seen.count(key)


def controller(sync: Recorder, clock: FakeClock, **kwargs: object) -> Controller[str]:
    limiter = ItemBackoff[str](Backoff(initial=1.0, maximum=1.0))  # at most a second
    return Controller("test", sync, clock=clock.monotonic, rate_limiter=limiter, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_a_sync_that_succeeds_forgets_the_keys_failures(clock: FakeClock) -> None:
    sync = Recorder()
    loop = controller(sync, clock)
    loop.queue.add_rate_limited("a")  # a failure before
    assert loop.queue.requeues("a") == 1
    loop.start()
    try:
        clock.move(seconds=2)
        loop.queue.wake()
        eventually(lambda: sync.count("a") == 1)
        eventually(lambda: loop.queue.requeues("a") == 0)
    finally:
        loop.stop()


def test_requeue_after_queues_the_key_again_for_its_time(clock: FakeClock) -> None:
    sync = Recorder()
    sync.answers["a"] = lambda: Result(requeue_after=60)
    loop = controller(sync, clock)
    loop.start()
    try:
        loop.queue.add("a")
        eventually(lambda: sync.count("a") == 1)
        clock.move(seconds=59)
        loop.queue.wake()
        assert loop.queue.wait_idle(5) and sync.count("a") == 1
        clock.move(seconds=1)
        loop.queue.wake()
        eventually(lambda: sync.count("a") == 2)
    finally:
        loop.stop()


def test_a_failed_call_is_retried_after_the_servers_retry_after(clock: FakeClock) -> None:
    sync = Recorder()
    fail = iter([True])

    def once() -> Result | None:
        if next(fail, False):
            raise UnavailableError("503", status=503, retry_after=30)
        return None

    sync.answers["a"] = once
    loop = controller(sync, clock)
    loop.start()
    try:
        loop.queue.add("a")
        eventually(lambda: sync.count("a") == 1)
        clock.move(seconds=29)  # the backoff alone (a second at most) would be over
        loop.queue.wake()
        assert loop.queue.wait_idle(5) and sync.count("a") == 1
        clock.move(seconds=1)
        loop.queue.wake()
        eventually(lambda: sync.count("a") == 2)
    finally:
        loop.stop()


def test_a_bug_in_a_sync_is_logged_retried_and_never_ends_the_loop(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    sync = Recorder()
    sync.answers["bad"] = lambda: 1 / 0  # type: ignore[return-value,func-returns-value]
    loop = controller(sync, clock)
    loop.start()
    try:
        loop.queue.add("bad")
        eventually(lambda: sync.count("bad") == 1)
        loop.queue.add("good")
        eventually(lambda: sync.count("good") == 1)
        assert loop.alive and loop.queue.requeues("bad") == 1
        assert "syncing bad failed unexpectedly" in caplog.text
    finally:
        loop.stop()


def test_a_held_loop_takes_nothing_before_it_is_released(clock: FakeClock) -> None:
    sync = Recorder()
    loop = controller(sync, clock, held=True)
    loop.start()
    try:
        loop.queue.add("a")
        assert loop.alive and not loop.queue.wait_idle(0.2) and sync.seen == []
        loop.release()
        eventually(lambda: sync.seen == ["a"])
    finally:
        loop.stop()


def test_a_held_loop_stops_at_once() -> None:
    loop = controller(Recorder(), FakeClock(), held=True)
    loop.start()
    assert loop.stop(timeout=30) and not loop.alive


def test_a_draining_stop_syncs_what_was_queued_first(clock: FakeClock) -> None:
    sync = Recorder()
    entered, leave = threading.Event(), threading.Event()

    def slow() -> None:
        entered.set()
        leave.wait(30)

    sync.answers["first"] = slow
    loop = controller(sync, clock, drain=True)
    loop.start()
    loop.queue.add("first")
    assert entered.wait(30)
    loop.queue.add("second")
    stopped = threading.Thread(target=loop.stop, kwargs={"timeout": 30})
    stopped.start()
    leave.set()
    stopped.join(30)
    assert sync.seen == ["first", "second"] and not loop.alive


def test_stuck_for_is_how_long_the_key_in_hand_has_been_worked_on(clock: FakeClock) -> None:
    sync = Recorder()
    entered, leave = threading.Event(), threading.Event()
    sync.answers["a"] = lambda: (entered.set(), leave.wait(30), None)[2]
    loop = controller(sync, clock)
    loop.start()
    try:
        assert loop.stuck_for() == 0.0
        loop.queue.add("a")
        assert entered.wait(30)
        clock.move(seconds=90)
        assert loop.stuck_for() == 90.0
        leave.set()
        assert loop.queue.wait_idle(30) and loop.stuck_for() == 0.0
    finally:
        leave.set()
        loop.stop()


def test_a_loop_is_a_problem_once_one_sync_outlasts_the_bound_or_its_thread_died(
    clock: FakeClock,
) -> None:
    sync = Recorder()
    entered, leave = threading.Event(), threading.Event()
    sync.answers["a"] = lambda: (entered.set(), leave.wait(30), None)[2]
    loop = controller(sync, clock)
    loop.start()
    try:
        loop.queue.add("a")
        assert entered.wait(30)
        clock.move(seconds=300)
        assert loop.problems(stuck_after=300) == []
        clock.move(seconds=1)
        assert loop.problems(stuck_after=300) == ["test has been in one sync for more than 300s"]
        leave.set()
        assert loop.queue.wait_idle(30) and loop.problems(stuck_after=300) == []
        sync.answers["b"] = lambda: (_ for _ in ()).throw(SystemExit())  # what nothing catches
        loop.queue.add("b")
        eventually(lambda: not loop.alive, what="the loop's thread to die")
        assert loop.problems(stuck_after=300) == ["test died (SystemExit)"]
    finally:
        leave.set()
        loop.stop()
