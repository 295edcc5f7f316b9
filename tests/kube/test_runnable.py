"""One way to run a part (controller/kube/runnable.py): `stop` interrupts and joins; a part that
dies keeps the error it died of for the liveness probe; a part stuck in a call is reported, not
waited for, and ends with its call; a part starts again after a stop."""

from __future__ import annotations

import threading

from controller.kube.runnable import Runnable
from tests.support import WAIT, eventually


class Part:
    """Runs until interrupted."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.runs = 0

    def run(self) -> None:
        self.runs += 1
        self.stop.wait(WAIT)

    def interrupt(self) -> None:
        self.stop.set()


def test_stop_interrupts_and_joins() -> None:
    part = Part()
    runner = Runnable("part", part.run, part.interrupt)
    runner.start()
    assert runner.alive
    assert runner.stop(WAIT)
    assert not runner.alive and runner.error is None


def test_a_part_that_dies_keeps_its_error() -> None:
    def run() -> None:
        raise RuntimeError("the watch broke")

    runner = Runnable("part", run, lambda: None)
    runner.start()
    eventually(lambda: not runner.alive, what="the part to die")
    assert isinstance(runner.error, RuntimeError) and str(runner.error) == "the watch broke"


def test_a_part_stuck_in_a_call_is_reported_and_ends_with_it() -> None:
    release = threading.Event()
    runner = Runnable("part", lambda: release.wait(WAIT) and None, lambda: None)
    runner.start()
    assert not runner.stop(0.01)  # the interrupt does not reach the call it is in
    assert runner.alive
    release.set()
    eventually(lambda: not runner.alive, what="the call to end")


def test_a_part_starts_again_after_a_stop() -> None:
    part = Part()
    runner = Runnable("part", part.run, part.interrupt)
    runner.start()
    assert runner.stop(WAIT)
    part.stop.clear()
    runner.start()
    assert runner.alive
    assert runner.stop(WAIT)
    assert part.runs == 2


def test_problem_names_a_part_that_died_or_returned_never_one_stopped() -> None:
    def dies() -> None:
        raise RuntimeError("the watch broke")

    dead = Runnable("dead", dies, lambda: None)
    ended = Runnable("ended", lambda: None, lambda: None)
    part = Part()
    stopped = Runnable("stopped", part.run, part.interrupt)
    assert dead.problem() is None  # not started: nothing is wrong yet
    for runner in (dead, ended, stopped):
        runner.start()
    eventually(lambda: not dead.alive and not ended.alive, what="two parts to end")
    assert stopped.problem() is None
    assert stopped.stop(WAIT)
    assert (dead.problem(), ended.problem(), stopped.problem()) == (
        "dead died (RuntimeError)",
        "ended ended",
        None,
    )
