"""The one process assembly (`controller.process.Process`), as `run` and `hub` use it: parts
start in the order added and stop in reverse, after the step-down; a single replica leads from
start to stop and still writes while its parts finish; with election, a lost Lease stops the
writes before anything else and a stop releases the Lease; a part that cannot start stops what
started; what the assembly opened is closed once, after the parts; servers answer metrics and
probes with every check added; /healthz covers every thread, naming a part whose thread died or
whose loop is stuck in one sync, and its cause, logged once; the signal loop ends on SIGTERM
with exit 0 and on a start that fails with one line and exit 1."""

from __future__ import annotations

import os
import signal
import threading
import urllib.error
import urllib.request
from datetime import timedelta

import pytest

from controller.flags.options import Address, ProcessOptions
from controller.kube.api import LEASE
from controller.kube.controller import Controller
from controller.kube.fake import FakeKube
from controller.kube.runnable import Runnable
from controller.process import STUCK_CALLS, Process, serve_until_signalled
from statemachines.errors import AddonStatusError
from tests.clock import FakeClock
from tests.support import WAIT, eventually

LOOPBACK = Address(host="127.0.0.1", port=0)
OPTIONS = ProcessOptions(metrics_address=LOOPBACK, probe_address=LOOPBACK)
ELECTED = OPTIONS.model_copy(
    update={
        "leader_elect": True,
        "lease_duration": timedelta(seconds=3),
        "renew_deadline": timedelta(seconds=2),
        "retry_period": timedelta(seconds=0.05),
    }
)


class Part:
    def __init__(self, name: str, seen: list[str], *, fails: bool = False) -> None:
        self.name, self.seen, self.fails = name, seen, fails

    def start(self) -> None:
        if self.fails:
            raise AddonStatusError(f"{self.name} cannot start")
        self.seen.append(f"start {self.name}")

    def stop(self) -> None:
        self.seen.append(f"stop {self.name}")


def test_parts_start_in_order_and_stop_in_reverse_after_the_step_down() -> None:
    seen: list[str] = []
    process = Process(OPTIONS, serve=False)
    process.add("a", Part("a", seen))
    process.add("b", Part("b", seen))
    process.on_leading(lambda: seen.append(f"lead, may write: {process.role.may_write()}"))
    process.on_stepping_down(lambda: seen.append(f"step down, may write: {process.leading}"))
    with process:
        assert process.leading
    assert seen == [
        "start a",
        "start b",
        "lead, may write: True",
        # A single replica still writes while its parts finish what they hold.
        "step down, may write: True",
        "stop b",
        "stop a",
    ]
    assert not process.leading


def test_a_part_that_cannot_start_stops_what_started() -> None:
    seen: list[str] = []
    process = Process(OPTIONS, serve=False)
    process.add("a", Part("a", seen))
    process.add("b", Part("b", seen, fails=True))
    process.close_with(lambda: seen.append("close"))
    with pytest.raises(AddonStatusError, match="b cannot start"):
        process.start()
    assert seen == ["start a", "stop a", "close"]


def test_what_the_assembly_opened_is_closed_once_after_the_parts_stopped() -> None:
    seen: list[str] = []
    process = Process(OPTIONS, serve=False)
    process.add("a", Part("a", seen))
    process.close_with(lambda: seen.append("close client"))
    process.close_with(lambda: seen.append("close hub source"))
    with process:
        assert seen == ["start a"]
    process.stop()  # idempotent: nothing is closed twice
    assert seen == ["start a", "stop a", "close hub source", "close client"]


def test_the_servers_answer_every_check_and_the_leader_gauge() -> None:
    process = Process(OPTIONS)
    healthy = threading.Event()
    process.add("a", Part("a", []), alive=lambda: True, ready=healthy.is_set)
    with process:
        probes = process.url(process.probes)
        with pytest.raises(urllib.error.HTTPError) as unready:
            urllib.request.urlopen(f"{probes}/readyz?verbose", timeout=WAIT)
        assert "[-]a failed" in unready.value.read().decode()
        healthy.set()
        with urllib.request.urlopen(f"{probes}/readyz", timeout=WAIT) as answer:
            assert answer.status == 200
        with urllib.request.urlopen(f"{process.url(process.metrics_server)}/metrics") as answer:
            assert "addon_status_leader 1.0" in answer.read().decode()


def test_an_elected_leader_stops_writing_first_when_it_loses_and_releases_on_stop() -> None:
    kube = FakeKube()
    seen: list[str] = []
    process = Process(ELECTED, lease_kube=kube, serve=False, identity="a")
    process.on_leading(lambda: seen.append("lead"))
    process.on_stepping_down(lambda: seen.append(f"step down, may write: {process.leading}"))
    process.start()
    try:
        eventually(lambda: process.leading, "leadership")
    finally:
        process.stop()
    assert seen == ["lead", "step down, may write: False"]
    lease = kube.stored(LEASE, "default", "addon-status")
    assert lease is not None and not lease["spec"].get("holderIdentity")


def test_the_signal_loop_ends_on_sigterm_with_0_and_a_failed_start_with_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    seen: list[str] = []

    def start() -> Part:
        part = Part("a", seen)
        part.start()
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGTERM)).start()
        return part

    assert serve_until_signalled("test", start) == 0
    assert seen == ["start a", "stop a"]

    def fails() -> Part:
        raise AddonStatusError("no such thing")

    assert serve_until_signalled("test", fails) == 1
    assert capsys.readouterr().err == "addon-status test: cannot start: no such thing\n"


class Dying:
    """A part whose thread dies of a bug when the test says so."""

    def __init__(self) -> None:
        self.wake, self.dies = threading.Event(), False
        self.runner = Runnable("dying-thread", self._run, self.wake.set)

    def _run(self) -> None:
        self.wake.wait()
        if self.dies:
            raise RuntimeError("a bug")

    def start(self) -> None:
        self.runner.start()

    def stop(self) -> None:
        self.runner.stop(WAIT)

    def problems(self, stuck_after: float) -> list[str]:
        problem = self.runner.problem()
        return [] if problem is None else [problem]


def healthz(process: Process[ProcessOptions]) -> tuple[int, str]:
    try:
        url = f"{process.url(process.probes)}/healthz?verbose"
        with urllib.request.urlopen(url, timeout=WAIT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_healthz_names_a_part_whose_thread_died_and_why_and_the_log_tells_it_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    process = Process(OPTIONS)
    part = Dying()
    process.add("dying", part)
    with process:
        code, body = healthz(process)
        assert code == 200 and "[+]dying ok" in body
        part.dies = True
        part.wake.set()
        eventually(lambda: not part.runner.alive, "the part's thread to die")
        for _ in range(2):
            code, body = healthz(process)
            assert code == 503
            assert "[-]dying failed: dying-thread died (RuntimeError)" in body
            assert "[+]probes ok" in body
    told = [r for r in caplog.records if r.getMessage() == "liveness fails"]
    assert [(r.part, r.cause) for r in told] == [("dying", "dying-thread died (RuntimeError)")]  # type: ignore[attr-defined]


def test_healthz_names_a_loop_stuck_in_one_sync_past_its_bound() -> None:
    clock = FakeClock()
    entered, leave = threading.Event(), threading.Event()

    def sync(key: str) -> None:
        entered.set()
        leave.wait(WAIT)

    loop: Controller[str] = Controller("stuck-loop", sync, clock=clock.monotonic)
    process = Process(OPTIONS)
    process.add("loop", loop)
    bound = STUCK_CALLS * OPTIONS.request_timeout
    with process:
        loop.queue.add("key")
        try:
            assert entered.wait(WAIT)
            clock.move(seconds=bound)
            assert healthz(process)[0] == 200  # long, but not beyond what its calls allow
            clock.move(seconds=1)
            code, body = healthz(process)
            assert code == 503
            stuck = f"stuck-loop has been in one sync for more than {bound:g}s"
            assert f"[-]loop failed: {stuck}" in body
        finally:
            leave.set()
        eventually(lambda: healthz(process)[0] == 200, "the loop back to health")


def test_healthz_covers_the_processs_own_threads() -> None:
    process = Process(ELECTED, lease_kube=FakeKube(), identity="a")
    with process:
        eventually(lambda: process.leading, "leadership")
        code, body = healthz(process)
    checks = {line[3:].split(" ")[0] for line in body.splitlines() if line.startswith("[+]")}
    assert code == 200
    assert checks == {"leader-election", "metrics", "probes", "deadlines"}
