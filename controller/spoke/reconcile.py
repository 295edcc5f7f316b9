"""What the worker's items mean: the collectors' machines and the CR behind them.

The `Reconciler` holds the machines (`AddonState`) and the worker's knowledge of the CR (read?
present? leading? does the status lag?). It asks the core what a report, a watch event or the
passing of time means (`apply`, `observe_generation`, `observe_result`, `advance`) and adopts
the answer (metrics, Events waiting for the write); `write()` then makes the CR say it, once
for everything adopted since the last write. It does no threading of its own: the worker calls
it from its one sync at a time, so nothing here needs a lock, and it never waits: a write that
failed is tried again when the worker's loop says (its rate limiter).

Leadership is one state, the replica's `Role`: `role.may_write()` is asked right before every
write and before judging a report, so a Lease whose renew deadline passed stops the writes at
once and two replicas never write the status at the same time. `lead()` is the worker's part of
a new verdict, delivered through its inbox: a new term rebuilds the machines from the CR, where
the previous leader left them (until then this replica is not `leading`). The status as this
replica finds it on becoming leader (or at start, when it leads) goes to the status hooks like
a written one, so that hub replication starts from the CR and not from nothing.

A status the API server refuses (400, 413, 422, "request is too large") cannot be written by
trying again: the machines are rolled back to what the CR holds (a fresh read; in the acm
profile the bookkeeping ConfigMap is put back first: `controller.spoke.transaction`), a Warning
Event and a metric say so, and `write()` tells the worker, which answers the reports that led
there. A report that claims a generation newer than the one the watch delivered makes the
reconciler read the CR first (the watch may be behind; at most once a sync); the core then
refuses it if it is still ahead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import Enum
from typing import Any

from controller.kube.api import KubeError, NotFoundError, WatchEvent
from controller.ops.clocks import MachineClock
from controller.ops.role import Role
from controller.spoke.addon import AddonStore, EventRecord
from controller.spoke.events import records_for
from controller.spoke.kept import KeptStatus
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.status_writer import SpokeStatus, owned_types
from controller.spoke.transaction import StatusTransaction, Written
from statemachines import (
    AddonState,
    Config,
    Outcome,
    Report,
    StoredStateError,
    advance,
    apply,
    next_wakeup,
    observe_generation,
    observe_result,
    resume,
)
from statemachines.health import Result
from statemachines.placement import bookkeeping, on_cr

__all__ = ["LEASE_POLL", "Phase", "Reconciler", "Written"]

log = logging.getLogger(__name__)

LEASE_POLL = 0.05  # seconds between looks at a lapsing Lease while a change waits for it


class Phase(Enum):
    """A replica's part in leadership, as the reconciler sees it."""

    FOLLOWING = "following"
    CATCHING_UP = "catching up"  # elected; rebuilds its machines from a read of the CR first
    LEADING = "leading"


class Reconciler:
    """The machines of one addon CR and the status writes that follow them."""

    def __init__(
        self,
        store: AddonStore,
        config: Config,
        *,
        metrics: ControllerMetrics,
        clock: MachineClock,
        record_events: Callable[[list[EventRecord]], None],
        role: Role,
        write_attempts: int = 5,
    ) -> None:
        self.config = config
        self.status = SpokeStatus(
            store, owned=owned_types(config.profile), metrics=metrics, attempts=write_attempts
        )
        self.role = role
        self._term: int | None = None  # the leadership term the machines were rebuilt in
        self._present = False  # the CR exists, as far as the last read or event says
        self._store = store
        self._metrics = metrics
        self._clock = clock
        self._record_events = record_events
        self._records: list[EventRecord] = []  # the Events of changes not written yet
        self._state: AddonState | None = None
        self._uid: str | None = None
        # What the profile's CRD prunes (acm) is kept in a ConfigMap beside the CR.
        self._kept = KeptStatus(
            store.kube, store.ref, keeps=not config.profile.status_keeps_bookkeeping
        )
        # What each watched object's rule said last, and the objects' resourceVersions:
        # replayed onto machines rebuilt from the CR, which may lag behind them.
        self._results: dict[str, Result] = {}
        self.objects_seen: dict[str, str] = {}
        self._write = StatusTransaction(self.status, self._kept)
        self._read: bool | KubeError = False  # the CR read again in this sync (or why not)

    @property
    def state(self) -> AddonState:
        assert self._state is not None, "begin() first"
        return self._state

    @property
    def phase(self) -> Phase:
        """Where this replica stands: following, catching up (elected, the machines not yet
        rebuilt from a read of the CR in this term), or leading."""
        if not self.role.elected:
            return Phase.FOLLOWING
        return Phase.LEADING if self._term == self.role.term else Phase.CATCHING_UP

    @property
    def leading(self) -> bool:
        return self.phase is Phase.LEADING

    @property
    def present(self) -> bool:
        """The CR exists, as far as the last read or watch event says."""
        return self._present

    @property
    def unwritten(self) -> bool:
        """A change of the machines is not on the CR yet."""
        return self.status.owed

    @property
    def accepting(self) -> bool:
        """Leading, and the Lease still held right now: a report may be judged."""
        return self.leading and self.role.may_write()

    def begin(self, obj: dict[str, Any]) -> None:
        """The machines as the CR (or the bookkeeping beside it) stores them; a stored field
        out of bounds is taken as absent and told (docs/spec.md §6). Raises KubeError if the
        bookkeeping cannot be read."""
        self._rebuild(obj, self._stored(obj))
        if self.role.elected:
            self._term = self.role.term
            self._announce_read()

    # ---- one sync: catch up, the items, one write --------------------------------------------

    def catch_up(self) -> None:
        """A sync begins: rebuild after becoming leader, fire the timers due."""
        self._read = False
        if self.phase is Phase.CATCHING_UP:
            self._sync()
        wakeup = next_wakeup(self.state, self.config)
        if wakeup is not None and wakeup <= self._clock():
            self._metrics.reconciles.labels("timer").inc()
            self.settle(advance(self.state, self._clock(), config=self.config), cause="timer")

    def judge(self, report: Report) -> Outcome:
        """The core's outcome for `report`, counted but not adopted yet: the caller `settle`s it
        and answers the verdict once the CR holds it. Only while `accepting`.

        Raises KubeError when the report claims a newer generation than the one known and
        the CR cannot be read to check it (the caller answers: retry)."""
        assert self.leading, "a follower judges no report"
        if (report.observed_generation or 0) > self.state.generation:
            self._read_again()
        outcome = apply(self.state, report, self._clock(), config=self.config)
        assert outcome.verdict is not None
        reason = self.config.profile.name_of(report.reason)
        self._metrics.count_verdict(reason, outcome.verdict)
        return outcome

    def observe(self, event: WatchEvent) -> None:
        """A watch event: a deleted or new CR, a new spec generation, someone else's write."""
        if event.type == "DELETED":
            self._present = False
            log.warning("the addon CR was deleted; status writes wait for it to come back")
            return
        obj = event.object
        meta = obj.get("metadata") or {}
        if self._uid and meta.get("uid") and meta.get("uid") != self._uid:
            log.warning("the addon CR was created anew; its machines start over from it")
            fresh = None if self._kept.separate else obj.get("status")
            self._rebuild(obj, fresh)
        self._present = True
        foreign = self.status.seen(event)  # before a write: it starts from this CR
        generation = int(meta.get("generation") or 0)
        if generation > self.state.generation:
            outcome = observe_generation(self.state, generation, self._clock(), config=self.config)
            self.settle(outcome, cause="spec")
        if foreign and self.role.elected and self.status.lags(obj, self._on_cr):
            self.status.owe()

    def observe_result(self, resource: str, result: Result, version: str) -> None:
        """What a watched object's rule says now: it changed, was deleted, or was listed
        (docs/spec.md §8)."""
        self._results[resource] = result
        outcome = observe_result(self.state, resource, result, self._clock(), config=self.config)
        self.objects_seen[resource] = version
        counted = outcome.state.health[resource]
        latest = counted.pending.reason if counted.pending else counted.reason  # this result's
        self._metrics.resource_evaluations.labels(resource, latest).inc()
        self.settle(outcome, cause="object")

    def lead(self, leader: bool) -> None:
        """Leader election's verdict (already on `role`), on the worker's thread."""
        if not leader:
            self._term = None
            self._kept.abandon()
            self.status.forgive()
            self._records.clear()
            log.info("leadership lost: no more status writes or reports")
        elif not self.leading:
            self._sync()

    def settle(self, outcome: Outcome, *, cause: str) -> bool:
        """Adopt `outcome`: metrics, and the status and Events it changes, owed to the next
        write; whether it changed the status."""
        before = self.state
        self._state = outcome.state
        for change in outcome.changes:
            log.info(
                "collector moved",
                extra={
                    "collector": change.collector,
                    "from": change.before.label,
                    "to": change.after.label,
                    "cause": change.cause.value,
                },
            )
        self._metrics.count_moves(outcome.changes)
        self._show()
        if outcome.conditions is None or not self.leading:
            return False  # nothing to write, or not ours to write
        log.debug("status changed", extra={"trigger": cause})
        self._records += records_for(
            outcome, before, self._clock(), uid=self._uid, profile=self.config.profile
        )
        self.status.owe()
        return True

    def write(self) -> tuple[Written, str] | None:
        """The sync's one write, when a change is owed and may be written now, and the Events
        of what it carries (none for a rejected change, which is rolled back); what came of it
        and the API server's words for a rejection. None: nothing was tried."""
        records, self._records = self._records, []
        if not (self.status.owed and self._writing):
            self._tell(records)
            return None
        written, why = self._write.write(self._on_cr, bookkeeping(self.state, self.config.profile))
        if written is Written.MISSING:
            self._present = False
        if written is Written.REJECTED:
            self._roll_back(why)
        else:
            self._tell(records)
        return written, why

    @property
    def retrying(self) -> bool:
        """After `write()`: a write or a read failed and must be tried again after a backoff
        (the CR could not be read on becoming leader, or a write failed and is still owed)."""
        return self.phase is Phase.CATCHING_UP or (self.status.owed and self._writing)

    def wait_seconds(self) -> float | None:
        """Until the next timer of the machines, or the next look at a lapsing Lease while a
        change waits for it; None: nothing to wake for."""
        waits = []
        wakeup = next_wakeup(self.state, self.config)
        if wakeup is not None:
            waits.append((wakeup - self._clock()).total_seconds())
        if self.status.owed and self.leading and self.present and not self.role.may_write():
            waits.append(LEASE_POLL)  # the Lease lapses: write once it is renewed, or step down
        return max(0.0, min(waits)) if waits else None

    # ---- inside ----------------------------------------------------------------------------

    @property
    def _writing(self) -> bool:
        return self.leading and self.present and self.role.may_write()

    @property
    def _on_cr(self) -> dict[str, Any]:
        return on_cr(self.state, self.config.profile)

    def _tell(self, records: list[EventRecord]) -> None:
        if records:
            self._record_events(records)

    def _read_again(self) -> None:
        """Read the CR (a report is ahead of the watch), at most once a sync; raises the
        KubeError of a failed read, for this report and the later ones of the sync."""
        if self._read is False:
            try:
                self.observe(WatchEvent("SYNC", self._store.get()))
                self._read = True
            except KubeError as error:
                self._read = error
        if isinstance(self._read, KubeError):
            raise self._read

    def _roll_back(self, why: str) -> None:
        """Back to the CR as stored: writing the rejected status again cannot succeed, and
        waiting for it would hold every later report (the worker would be wedged).

        In the acm profile the bookkeeping ConfigMap was written before the CR, so it holds
        the rejected change: it is first put back to what went with the CR's last stored
        status (`KeptStatus.restore`). If that write fails too, the machines are rebuilt from
        that copy in memory and the status stays owed: the next write, after the backoff, puts
        the same bookkeeping back."""
        log.error("the API server rejected the status as invalid; rolled back", extra={"why": why})
        self._metrics.status_rejections.inc()
        # kube-apiserver keeps at most 1024 characters of a recorded Event's message.
        message = f"status rolled back to the stored one: {why}"[:1024]
        at = self._clock()
        self._record_events([EventRecord("StatusRejected", message, "Warning", at, self._uid)])
        if not self._write.undo():
            self._metrics.status_failures.inc()
        try:
            obj = self._store.get()
            stored = self._stored(obj)
        except KubeError:
            self._term = None  # not leading until _sync() rebuilds from a fresh read
        else:
            self._rebuild(obj, stored)

    def _stored(self, obj: dict[str, Any]) -> dict[str, Any] | None:
        """The status to resume from (`KeptStatus.stored`); bookkeeping that is not JSON is
        as if there were none."""
        try:
            return self._kept.stored(obj)
        except StoredStateError as error:  # not JSON: as if there were none
            self._metrics.stored_ignored_once([error])
            return None

    def _sync(self) -> None:
        """Rebuild the machines from a fresh read of the CR (on becoming leader)."""
        try:
            obj = self._store.get()
            stored = self._stored(obj)
        except KubeError as error:
            self._present = not isinstance(error, NotFoundError)
            log.warning(
                "cannot read the addon CR or its bookkeeping; retrying",
                extra={"error": str(error)},
            )
            return
        self._rebuild(obj, stored)
        self._term = self.role.term
        log.info("leading: machines rebuilt from the addon CR")
        self._announce_read()

    def _announce_read(self) -> None:
        """The CR already holds our status (a write still due announces itself later)."""
        if not self.status.owed:
            self.status.tell_hooks()

    def _rebuild(self, obj: dict[str, Any], stored: dict[str, Any] | None) -> None:
        meta = obj.get("metadata") or {}
        generation = int(meta.get("generation") or 1)
        resumed = resume(self.config, self._clock(), status=stored, generation=generation)
        self._metrics.stored_ignored_once(resumed.ignored)
        state = resumed.state
        for resource, result in self._results.items():
            state = observe_result(state, resource, result, self._clock(), config=self.config).state
        self._state = state
        self._uid = meta.get("uid")
        self._present = True
        self._kept.adopt(obj, stored)
        self.status.adopt(obj, self._on_cr)
        if self._kept.owed:  # the write puts it back
            self.status.owe()
        self._show()

    def _show(self) -> None:
        self._metrics.show_states((c.name, c.state, c.stale) for c in self.state.collectors)
        self._metrics.show_resources((n, h.health) for n, h in self.state.health.items())
