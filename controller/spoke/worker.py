"""The reconcile worker: one `sync(addon)` on the controller loop (`controller.kube.controller`),
the only code that touches the collectors' state machines.

Report handlers, watch events, watched objects' results and leadership verdicts only put an item
in the worker's inbox (in order; at most `capacity` wait) and queue the addon's one key. One
sync takes everything waiting, fires the timers due, applies the items to the machines in
order, writes the status once, and only then answers each report whose effect the CR now holds:
a burst of reports costs one write. Because nothing else touches the machines, no lock guards
them, and a report's answer is exactly the verdict the sync gave it.

Accepted means persisted: a verdict that claims something about the addon (accepted, pending,
heartbeat) is given once the addon CR holds the state it speaks of, so a reporter that got
"accepted" knows its report survives a crash or a failover of this replica. A refusal changes
nothing and is answered at once, as is a report whose state the CR already holds. While a write
cannot succeed (the spoke's API server is down, the CR is gone), the answers wait for the write
that carries them; a caller whose timeout runs out first gets `SubmitTimeoutError`, and one
whose replica lost the leadership meanwhile gets `NotLeaderError` (the report API answers both
with 503 and `Retry-After`). Its repeated report is judged again, so nothing is ever called
accepted that is not on the CR. The state in memory stays the truth meanwhile; a failed write
is tried again after the loop's rate-limited delay, or sooner with the next item (each sync
that owes a change tries to write it, as controller-runtime retries a key).

Time passing is the core's next wake-up: a sync returns `Result(requeue_after=...)` until then
(a window's end, staleness, a health rule's `for`), so a dampening window ends on time when
nobody reports, and an idle worker sleeps until then.

A write that the API server refuses for its content or size (400, 413, 422, "request is too
large") is never retried as it was: the machines go back to what the CR holds. When the write
carried one report's change and nothing else, that report gets `StatusRejectedError` (the
report API answers 422 with the API server's reason); otherwise every report rolled back with it
gets a `WorkerError` (503: send again) and is remembered: sent again, it is written on its
own (set aside, without holding up what comes after it, until no other change waits), so that
the report the API server refuses is the one told and the others are stored. A worker that cannot
write says so: `writing` turns False once a change has waited longer than `unready_after`
seconds to be written, and readiness follows it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from controller.kube.api import KubeError, WatchEvent
from controller.kube.backoff import Backoff
from controller.kube.controller import Controller, Result
from controller.kube.ratelimit import ItemBackoff
from controller.kube.workqueue import QueueMetrics
from controller.ops.clocks import MachineClock, utc_now
from controller.ops.role import Role
from controller.spoke.addon import AddonStore, EventRecord
from controller.spoke.errors import (
    NotLeaderError,
    QueueFullError,
    SubmitTimeoutError,
    WorkerError,
    WorkerStoppedError,
)
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.reconcile import Reconciler, Written
from controller.spoke.status_writer import StatusHook
from controller.spoke.work_items import (
    TRIGGERS,
    Answers,
    Inbox,
    Item,
    Judge,
    Lead,
    ObjectChanged,
    Observe,
    Put,
    Tick,
    Waiting,
    answer_future,
    settle_future,
)
from statemachines import AddonState, Config, Report, Verdict, VerdictKind
from statemachines.health import evaluate

__all__ = ["WRITE_BACKOFF", "Worker"]

log = logging.getLogger(__name__)

WRITE_BACKOFF = Backoff(initial=0.25, maximum=30.0)  # a failed status write, tried again


class Worker:
    """The inbox, the machines and their one sync; see the module docstring."""

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
        write_attempts: int = 5,
        unready_after: float = 30.0,
        queue_metrics: QueueMetrics | None = None,
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
            write_attempts=write_attempts,
        )
        # Callables receiving the full status after every successful write of the spoke CR.
        self.on_status_written: list[StatusHook] = self._reconciler.status.hooks
        self._store = store
        self._metrics = metrics
        self._inbox = Inbox(capacity)
        self._key = str(store.ref)
        self.loop: Controller[str] = Controller(
            "reconcile-worker", self._sync, rate_limiter=ItemBackoff(WRITE_BACKOFF),
            metrics=queue_metrics, drain=True,
        )  # fmt: skip
        self._answers = Answers()
        self._running = False
        self._unready_after = unready_after
        self._unwritten_since: float | None = None  # monotonic; set by the sync
        metrics.queue_depth.set_function(self._inbox.__len__)

    # ---- the caller's side (any thread) -------------------------------------------------

    def start(self, cr: dict[str, Any] | None = None) -> None:
        """Rebuild the machines from the CR (read now unless given) and start the loop.

        Raises NotFoundError or another KubeError when the CR cannot be read, StoredStateError
        when its status cannot be read back: the caller reports those and exits.
        """
        self._reconciler.begin(cr if cr is not None else self._store.get())
        self._inbox.open()
        self._running = True
        self.loop.start()
        self.loop.queue.add(self._key)  # the first sync writes what the CR lacks

    def stop(self, timeout: float = 5.0) -> None:
        """Handle what is waiting, then stop; answer what came later (or what still waits
        when `timeout` runs out) with WorkerStoppedError."""
        if not self._running and not self.loop.alive:
            return
        self._running = False
        self._inbox.close()
        self.loop.stop(timeout)
        for item in self._inbox.clear():
            if isinstance(item, Judge | Tick):
                future = item.answer if isinstance(item, Judge) else item.done
                settle_future(future, WorkerStoppedError("the worker stopped"))
        self._answers.fail(WorkerStoppedError, "the worker stopped before the write")

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
        put = self._inbox.put(Judge(report, answer, deadline), timeout=timeout)
        if put is Put.FULL:
            raise QueueFullError(f"the worker's queue stayed full for {timeout:g}s")
        if put is Put.CLOSED:
            raise WorkerStoppedError("the worker stopped")
        self.loop.queue.add(self._key)
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
        """Wake the worker: it fires the timers due by its clock and tries a pending write;
        the future completes once it has (and once everything put before was handled)."""
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
        return self.loop.alive

    def problems(self, stuck_after: float) -> list[str]:
        """Why the worker is not doing its job (liveness): its thread died, or one sync has
        lasted longer than `stuck_after` seconds."""
        return self.loop.problems(stuck_after)

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
        """The machines as of the last sync (an immutable value; safe to read)."""
        return self._reconciler.state

    def _put(self, item: Item) -> None:
        """Put `item` in the inbox, waiting for room; once the worker stops it is dropped (a
        tick is told so)."""
        if self._inbox.put(item) is Put.DONE:
            self.loop.queue.add(self._key)
        elif isinstance(item, Tick):
            settle_future(item.done, WorkerStoppedError("the worker stopped"))

    # ---- the sync (the loop's thread) ----------------------------------------------------

    def _sync(self, key: str) -> Result | None:
        """Everything waiting, applied in order after the timers due; one write; the answers."""
        reconciler = self._reconciler
        begun: list[tuple[str, float]] = []  # each item's trigger, and when it was taken
        ticks: list[Future[None]] = []
        written: tuple[Written, str] | None = None
        changes = 0
        deferred: list[Item] = []  # suspects, for a write of their own: they wait, not the rest
        try:
            reconciler.catch_up()
            for _ in range(len(self._inbox)):  # what came during this sync waits for the next
                item = self._inbox.take()
                if item is None:
                    break
                suspect = isinstance(item, Judge) and item.report in self._answers.suspects
                if suspect and reconciler.status.changes:
                    deferred.append(item)
                    continue
                trigger = TRIGGERS[type(item)]
                begun.append((trigger, time.perf_counter()))
                self._metrics.reconciles.labels(trigger).inc()
                if isinstance(item, Tick):
                    ticks.append(item.done)
                    continue
                changed = self._apply(item)
                if suspect and isinstance(item, Judge):
                    self._answers.suspects.remove(item.report)
                    if changed:
                        self.loop.queue.add(key)  # the rest for the next write
                        break
            changes = reconciler.status.changes
            written = reconciler.write()
        finally:
            self._inbox.put_back(deferred)
            if deferred and not reconciler.unwritten:  # else the write's retry comes first
                self.loop.queue.add(key)
            self._answer(written, changes)
            self._note_unwritten()
            ended = time.perf_counter()
            for trigger, began in begun:
                self._metrics.reconcile_duration.labels(trigger).observe(ended - began)
            for done in ticks:
                answer_future(done, None)
        return self._next(written)

    def _next(self, written: tuple[Written, str] | None) -> Result | None:
        """The next sync: after the backoff when a write or a read failed (or a write was
        rejected: a timer's change rejected again must not spin), the timers' time anyway."""
        wait = self._reconciler.wait_seconds()
        if self._reconciler.retrying or (written is not None and written[0] is Written.REJECTED):
            if wait is not None:
                self.loop.queue.add_after(self._key, wait)
            return Result(retry=True)
        return None if wait is None else Result(requeue_after=wait)

    def _apply(self, item: Item) -> bool:
        """Apply one item; True when it is a report that changed the status. A bug in one item
        is logged, never the end of the others (its report is told to send again)."""
        try:
            if isinstance(item, Judge):
                return self._judge(item)
            if isinstance(item, Observe):
                self._reconciler.observe(item.event)
            elif isinstance(item, ObjectChanged):
                self._reconciler.observe_result(item.resource, item.result, item.version)
            elif isinstance(item, Lead):
                self._reconciler.lead(item.leader)
        except Exception:
            log.exception("reconcile failed; the worker goes on")
            if isinstance(item, Judge):
                settle_future(item.answer, WorkerError("the report could not be judged; retry"))
        return False

    def _judge(self, item: Judge) -> bool:
        if not item.answer.set_running_or_notify_cancel():
            return False  # the caller gave up before the worker got to it
        if not self._reconciler.accepting:
            item.answer.set_exception(NotLeaderError("this replica is not the leader"))
            return False
        try:
            outcome = self._reconciler.judge(item.report)
        except KubeError as error:
            item.answer.set_exception(WorkerError(f"cannot read the addon CR: {error}; retry"))
            return False
        changed = self._reconciler.settle(outcome, cause="report")
        assert outcome.verdict is not None
        if outcome.verdict.kind is VerdictKind.REFUSED:
            item.answer.set_result(outcome.verdict)  # a refusal changed nothing
            return False
        waiting = Waiting(item.report, item.answer, outcome.verdict, item.deadline, changed)
        self._answers.wait(waiting)
        return changed

    def _answer(self, written: tuple[Written, str] | None, changes: int) -> None:
        if written is not None and written[0] is Written.REJECTED:
            self._answers.rejected(written[1], changes)
        else:
            reconciler = self._reconciler
            self._answers.after_write(leading=reconciler.leading, unwritten=reconciler.unwritten)

    def _note_unwritten(self) -> None:
        if not (self._reconciler.unwritten and self._reconciler.leading):
            self._unwritten_since = None
        elif self._unwritten_since is None:
            self._unwritten_since = time.monotonic()
