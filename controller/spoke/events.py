"""Kubernetes Events on the addon CR: what changed, in words, for `kubectl describe`.

Every move of a collector's machine (a report, a dampening window running out, staleness)
becomes a `CollectorStateChanged` Event, and a change of the addon's standard condition that is
True (or of its reason) an `AddonStatusChanged` one; the words come from the core's
`Outcome.changes`. Events are best effort, as in client-go: they are sent from a thread of their
own through the work queue (`controller.kube.workqueue`, a key per record, at most `capacity`
waiting), so a slow or failing Events API never delays a status write, and when it is full the
newest Events are dropped (and counted), as client-go's broadcaster drops them when its channel
is full. Repeats are correlated as client-go's recorder does (`controller.spoke.event_series`):
a move seen before raises the count of its Event instead of creating another.
"""

from __future__ import annotations

import itertools
import logging
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Literal

from controller.kube.api import KubeError
from controller.kube.controller import Controller
from controller.kube.workqueue import QueueMetrics
from controller.spoke.addon import AddonStore, EventRecord
from controller.spoke.event_series import EventCorrelator
from statemachines import AddonState, Cause, Change, Outcome
from statemachines.history import moved
from statemachines.vocabulary import ConditionType, Profile, State

__all__ = ["ADDON_CHANGED", "COLLECTOR_CHANGED", "EventRecorder", "records_for"]

log = logging.getLogger(__name__)

COLLECTOR_CHANGED = "CollectorStateChanged"
ADDON_CHANGED = "AddonStatusChanged"


def records_for(
    outcome: Outcome, before: AddonState, now: datetime, *, uid: str | None, profile: Profile
) -> list[EventRecord]:
    """The Events that `outcome` deserves: one per collector move, one if the addon moved;
    reasons spelled as `profile` writes them on the CR."""
    records = [_collector_record(change, uid, profile) for change in outcome.changes]
    addon = moved(before.conditions, outcome.state.conditions)
    if addon is not None:
        old, new = addon
        was = f"{old.type} ({old.reason})" if old else "no status"
        records.append(
            EventRecord(
                reason=ADDON_CHANGED,
                message=f"{was} -> {new.type} ({new.reason}): {new.message}",
                type="Warning" if new.type == ConditionType.DEGRADED else "Normal",
                at=now,
                uid=uid,
            )
        )
    return records


def _collector_record(change: Change, uid: str | None, profile: Profile) -> EventRecord:
    warn = change.after.state is State.DEGRADED or change.cause is Cause.STALENESS
    kind: Literal["Normal", "Warning"] = "Warning" if warn else "Normal"
    return EventRecord(
        reason=COLLECTOR_CHANGED,
        message=profile.spelled(f"{change.collector}: {change.label} (by {change.cause.value})"),
        type=kind,
        at=change.at,
        uid=uid,
    )


_NOT_FOUND = 404


class EventRecorder:
    """Sends EventRecords on its own thread; `record` never blocks the caller. `on_result` hears
    `recorded` (a new Event), `aggregated` (an existing Event's count raised), `failed` or
    `dropped` for each record."""

    def __init__(
        self,
        store: AddonStore,
        *,
        capacity: int = 256,
        on_result: Callable[[str], None] | None = None,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self._store = store
        self._capacity = capacity
        self._lock = threading.Lock()
        self._waiting: dict[int, EventRecord] = {}  # guarded by `_lock`
        self._numbers = itertools.count()
        self._on_result = on_result or (lambda outcome: None)
        self._correlator = EventCorrelator()
        self.loop: Controller[int] = Controller(
            "event-recorder", self._sync, metrics=metrics, drain=True
        )

    def start(self) -> None:
        self.loop.start()
        with self._lock:  # started again after a stop: what waits is still due
            for number in self._waiting:
                self.loop.queue.add(number)

    def record(self, records: Iterable[EventRecord]) -> None:
        for record in records:
            with self._lock:
                full = len(self._waiting) >= self._capacity
                if not full:
                    number = next(self._numbers)
                    self._waiting[number] = record
            if full:
                self._on_result("dropped")
                log.warning("event queue full; Event dropped", extra={"reason": record.reason})
            else:
                self.loop.queue.add(number)

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is queued (each call has its request timeout), then end the thread."""
        self.loop.stop(timeout)

    def problems(self, stuck_after: float) -> list[str]:
        return self.loop.problems(stuck_after)

    def _sync(self, number: int) -> None:
        """One Event sent, once: a failure is counted and told, never retried (client-go's
        recorder drops an Event it could not send)."""
        with self._lock:
            item = self._waiting.pop(number, None)
        if item is None:
            return
        try:
            outcome = self._send(item)
        except Exception as error:
            self._on_result("failed")  # a bug too; the loop logs it
            if not isinstance(error, KubeError):
                raise
            log.warning("cannot record Event", extra={"reason": item.reason, "error": str(error)})
        else:
            self._on_result(outcome)

    def _send(self, record: EventRecord) -> str:
        """client-go's `recordToSink`: patch the Event of a repeat, create it when it is new or
        was deleted meanwhile (404); tell the correlator the name the server holds."""
        correlation = self._correlator.correlate(record)
        event = correlation.event
        if correlation.update and event.name is not None:
            try:
                self._store.count_event(event)
            except KubeError as error:
                if error.status != _NOT_FOUND:
                    raise
            else:
                self._correlator.sent(correlation, event.name)
                return "aggregated"
        self._correlator.sent(correlation, self._store.record_event(event))
        return "recorded"
