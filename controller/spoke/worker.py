"""The single reconcile worker: the one thread that owns the collectors' state machines.

Report handlers, watch events and timers only put items on its queue (the work queue of
`controller.kube.workqueue`, each item under a number of its own so that none merges with
another and they come out in the order they went in; at most `capacity` wait); the worker takes
them one at a time and hands them to its `Reconciler` (what each item means). Because nothing else
touches the machines, no lock guards them, and a report's answer is exactly the verdict the
worker gave it.

Accepted means persisted. Order of work for a report: judge it, record the Events, write the
status if it changed, and only then answer the caller: a verdict that claims something about
the addon (accepted, pending, heartbeat) is given once the addon CR holds the state it speaks
of, so a reporter that got "accepted" knows its report survives a crash or a failover of this
replica. A refusal changes nothing and is answered at once, as is a report whose state the CR
already holds. While a write cannot succeed (the spoke's API server is down, the CR is gone),
the answers wait in a list that every successful write resolves; a caller whose timeout runs
out first gets `SubmitTimeoutError`, and one whose replica lost the leadership meanwhile gets
`NotLeaderError` (the report API answers both with 503 and `Retry-After`). Its repeated report
is judged again, so nothing is ever called accepted that is not on the CR. The state in memory
stays the truth meanwhile, and a failed write is retried with backoff from the worker's own
loop. Before every wait, the worker fires the timers that are due by the injected clock; it
waits on its queue until the next one, so a dampening window ends on time even when nobody
reports.

A write that the API server refuses for its content or size (400, 413, 422, "request is too
large") is never retried: the machines go back to what the CR holds, the report whose write it
was gets `StatusRejectedError` (the report API answers 422 with the API server's reason), and
reports whose effects were rolled back with it get a `WorkerError` (503: send again). A worker
that cannot write says so: `writing` turns False once a change has waited longer than
`unready_after` seconds to be written, and readiness follows it.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from controller.kube.api import KubeError, WatchEvent
from controller.kube.runnable import Runnable
from controller.kube.workqueue import WorkQueue
from controller.ops.clocks import MachineClock, utc_now
from controller.ops.role import Role
from controller.spoke.addon import AddonStore, EventRecord
from controller.spoke.errors import (
    NotLeaderError,
    QueueFullError,
    StatusRejectedError,
    SubmitTimeoutError,
    WorkerError,
    WorkerStoppedError,
)
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.reconcile import Reconciler
from controller.spoke.status_writer import StatusHook
from controller.spoke.work_items import (
    TRIGGERS,
    Item,
    Judge,
    Lead,
    ObjectChanged,
    Observe,
    Tick,
    Waiting,
)
from statemachines import AddonState, Config, Report, Verdict, VerdictKind
from statemachines.health import evaluate

__all__ = ["Worker"]

log = logging.getLogger(__name__)


class Worker:
    """One thread, one queue, the machines; see the module docstring for the order of work."""

    def __init__(
        self,
        store: AddonStore,
        config: Config,
        *,
        metrics: ControllerMetrics,
        clock: MachineClock = utc_now,
        record_events: Callable[[list[EventRecord]], None] | None = None,
        role: Role | None = None,
        capacity: int = 1024,
        max_wait: float = 30.0,
        write_attempts: int = 5,
        unready_after: float = 30.0,
    ) -> None:
        """`role` is asked before every write and report (default: the only replica, which
        leads from start to stop). `unready_after`: seconds a change may wait to be written
        before `writing` is False."""
        self.config = config
        self._specs = {r.name: r for r in config.resources}
        self.role = role or Role()
        self._reconciler = Reconciler(
            store,
            config,
            metrics=metrics,
            clock=clock,
            record_events=record_events or (lambda records: None),
            role=self.role,
            on_rejected=self._rejected,
            write_attempts=write_attempts,
        )
        # Callables receiving the full status after every successful write of the spoke CR.
        self.on_status_written: list[StatusHook] = self._reconciler.status.hooks
        self._store = store
        self._metrics = metrics
        self._queue: WorkQueue[int] = WorkQueue()
        self._items: dict[int, Item] = {}  # by number; guarded by `_lock`
        self._lock = threading.Lock()
        self._numbers = itertools.count()
        self._room = threading.Semaphore(capacity)  # one per item waiting
        self._max_wait = max_wait
        self._runner = Runnable("reconcile-worker", self._run, self._finish)
        self._waiting: list[Waiting] = []  # the worker's thread only
        self._judging: Judge | None = None  # the report whose change is being written
        self._running = False
        self._unready_after = unready_after
        self._unwritten_since: float | None = None  # monotonic; set by the worker's thread
        metrics.queue_depth.set_function(lambda: len(self._items))

    # ---- the caller's side (any thread) -------------------------------------------------

    def start(self, cr: dict[str, Any] | None = None) -> None:
        """Rebuild the machines from the CR (read now unless given) and start the thread.

        Raises NotFoundError or another KubeError when the CR cannot be read, StoredStateError
        when its status cannot be read back: the caller reports those and exits.
        """
        self._reconciler.begin(cr if cr is not None else self._store.get())
        if self._queue.shutting_down:  # started again after a stop
            self._queue = WorkQueue()
        self._running = True
        self._runner.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Handle what is queued, then stop; answer what came later (or what is still queued
        when `timeout` runs out) with WorkerStoppedError."""
        if not self._running and not self._runner.alive:
            return
        self._running = False
        self._runner.stop(timeout)
        self._drain()

    def _finish(self) -> None:
        self._queue.shut_down(drain=True)

    def submit(self, report: Report, *, timeout: float) -> Verdict:
        """The verdict the worker gives `report`, once the CR holds its effect; blocks the
        caller until then.

        Raises NotLeaderError, WorkerStoppedError, QueueFullError, SubmitTimeoutError. After
        any of them the caller may send the report again (to the leader).
        """
        if not self._running:
            raise WorkerStoppedError("the reconcile worker is not running")
        if not self.role.may_write():
            raise NotLeaderError("this replica is not the leader; send the report to the leader")
        deadline = time.monotonic() + timeout
        answer: Future[Verdict] = Future()
        if not self._room.acquire(timeout=timeout):
            raise QueueFullError(f"the worker's queue stayed full for {timeout:g}s")
        self._enqueue(Judge(report, answer, deadline))
        try:
            return answer.result(timeout=max(0.0, deadline - time.monotonic()))
        except FutureTimeout as error:
            if answer.cancel():
                raise SubmitTimeoutError(
                    f"no verdict within {timeout:g}s; the report was not judged"
                ) from error
            if answer.done():  # answered just now
                return answer.result()
            raise SubmitTimeoutError(
                f"the report's effect was not on the addon CR within {timeout:g}s; send it again"
            ) from error

    def observe(self, event: WatchEvent) -> None:
        """A watch event on the CR (from the watch thread)."""
        self._put(Observe(event))

    def observe_object(self, resource: str, obj: dict[str, Any] | None, version: str) -> None:
        """A watched object of `resource` (None: gone), its rule applied here, in the caller's
        thread (the evaluator's, `controller.spoke.evaluation`), never on the worker's: a large
        object must not hold up the reports. The status is written only if it changed."""
        self._put(ObjectChanged(resource, evaluate(self._specs[resource], obj), version))

    @property
    def objects_seen(self) -> dict[str, str]:
        """Each watched object's resourceVersion as last handled (a copy)."""
        return dict(self._reconciler.objects_seen)

    def tick(self) -> Future[None]:
        """Wake the worker: it fires the timers due by its clock and retries a pending write;
        the future completes once it has (and once everything queued before was handled)."""
        done: Future[None] = Future()
        if not self._running:
            done.set_exception(WorkerStoppedError("the reconcile worker is not running"))
            return done
        self._put(Tick(done))
        return done

    def set_leader(self, leader: bool) -> None:
        """Leader election's verdict: a follower neither writes nor judges reports; a new
        leader first rebuilds its machines from the CR, where the old leader left them."""
        self.role.elect(leader)
        self._put(Lead(leader))

    @property
    def alive(self) -> bool:
        return self._runner.alive

    @property
    def present(self) -> bool:
        """The CR was read and has not been deleted since."""
        return self._reconciler.present

    @property
    def leading(self) -> bool:
        """This replica leads, holds the Lease, and has rebuilt its machines from the CR since
        it became leader."""
        return self._reconciler.leading and self.role.may_write()

    @property
    def writing(self) -> bool:
        """False once a change of the status has waited more than `unready_after` seconds to
        be written (the API server down or refusing, the Lease lapsing): readiness."""
        since = self._unwritten_since
        return since is None or time.monotonic() - since <= self._unready_after

    @property
    def state(self) -> AddonState:
        """The machines as of the last item handled (an immutable value; safe to read)."""
        return self._reconciler.state

    def _put(self, item: Item) -> None:
        while not self._room.acquire(timeout=0.5):
            if not self._running:
                return
        self._enqueue(item)

    def _enqueue(self, item: Item) -> None:
        """Queue `item` (its room taken); once the worker stops, it is answered at once."""
        with self._lock:
            number = next(self._numbers)
            self._items[number] = item
        self._queue.add(number)
        if self._queue.shutting_down:
            self._refuse(number)

    def _take(self, number: int) -> Item | None:
        with self._lock:
            item = self._items.pop(number, None)
        if item is not None:
            self._room.release()
        return item

    def _drain(self) -> None:
        with self._lock:
            numbers = list(self._items)
        for number in numbers:
            self._refuse(number)

    def _refuse(self, number: int) -> None:
        item = self._take(number)
        if isinstance(item, Judge) and item.answer.set_running_or_notify_cancel():
            item.answer.set_exception(WorkerStoppedError("the worker stopped"))
        elif isinstance(item, Tick):
            item.done.set_exception(WorkerStoppedError("the worker stopped"))

    # ---- the worker's side (its thread only) ---------------------------------------------

    def _run(self) -> None:
        queue = self._queue
        while True:
            try:
                self._reconciler.catch_up()
                self._answer_waiting()
                number = queue.get(timeout=self._reconciler.wait_seconds(self._max_wait))
                if number is None and queue.shutting_down:
                    self._fail_waiting(WorkerStoppedError, "the worker stopped before the write")
                    return
                if number is None:
                    continue  # a timer may be due
                queue.done(number)
                item = self._take(number)
                if item is not None:
                    self._handle(item)
            except Exception:
                # A bug in one item must not kill the only worker.
                log.exception("reconcile failed; the worker goes on")
            finally:
                self._answer_waiting()
                self._note_unwritten()

    def _note_unwritten(self) -> None:
        if not (self._reconciler.unwritten and self._reconciler.leading):
            self._unwritten_since = None
        elif self._unwritten_since is None:
            self._unwritten_since = time.monotonic()

    def _handle(self, item: Item) -> None:
        trigger = TRIGGERS[type(item)]
        started = time.perf_counter()
        self._metrics.reconciles.labels(trigger).inc()
        try:
            if isinstance(item, Judge):
                self._judge(item)
            elif isinstance(item, Observe):
                self._reconciler.observe(item.event)
            elif isinstance(item, ObjectChanged):
                self._reconciler.observe_result(item.resource, item.result, item.version)
            elif isinstance(item, Lead):
                self._reconciler.lead(item.leader)
            else:
                self._tick(item.done)
        finally:
            elapsed = time.perf_counter() - started
            self._metrics.reconcile_duration.labels(trigger).observe(elapsed)

    def _tick(self, done: Future[None]) -> None:
        try:
            self._reconciler.catch_up()
        except Exception as error:
            done.set_exception(error)
            raise
        done.set_result(None)

    def _judge(self, item: Judge) -> None:
        if not item.answer.set_running_or_notify_cancel():
            return  # the caller gave up before the worker got to it
        if not self._reconciler.accepting:
            item.answer.set_exception(NotLeaderError("this replica is not the leader"))
            return
        try:
            outcome = self._reconciler.judge(item.report)
        except KubeError as error:
            item.answer.set_exception(WorkerError(f"cannot read the addon CR: {error}; retry"))
            return
        self._judging = item
        try:
            self._reconciler.settle(outcome, cause="report")
        except Exception as error:
            if not item.answer.done():
                item.answer.set_exception(error)
            raise
        finally:
            self._judging = None
        assert outcome.verdict is not None
        if item.answer.done():  # its status write was rejected: answered by `_rejected`
            return
        if outcome.verdict.kind is VerdictKind.REFUSED:
            item.answer.set_result(outcome.verdict)  # a refusal changed nothing
            return
        self._waiting.append(Waiting(item.answer, outcome.verdict, item.deadline))

    def _rejected(self, why: str) -> None:
        """A status write was refused as invalid and rolled back (handed over by the
        reconciler, on this thread). The report being judged carried the change, with those
        still waiting (earlier writes failed): when alone, it is the culprit; else each is
        judged again on its own. A write after a timer or a watch event has no culprit."""
        judged = self._judging
        culprit = judged is not None and not self._waiting
        self._fail_waiting(WorkerError, f"its status write was rejected ({why})")
        if judged is not None and not judged.answer.done():
            failure = StatusRejectedError if culprit else WorkerError
            judged.answer.set_exception(failure(f"the API server rejected the status: {why}"))

    def _answer_waiting(self) -> None:
        """Answer the verdicts whose effect the CR now holds; tell those whose replica lost
        the leadership to send again; forget those whose callers stopped waiting."""
        if not self._waiting:
            return
        if not self._reconciler.leading:
            self._fail_waiting(NotLeaderError, "leadership moved before the status was written")
            return
        if not self._reconciler.unwritten:
            waiting, self._waiting = self._waiting, []
            for entry in waiting:
                entry.answer.set_result(entry.verdict)
            return
        now = time.monotonic()
        self._waiting = [w for w in self._waiting if w.deadline > now]

    def _fail_waiting(self, error: type[WorkerError], message: str) -> None:
        waiting, self._waiting = self._waiting, []
        for entry in waiting:
            entry.answer.set_exception(error(f"{message}; send the report again"))
