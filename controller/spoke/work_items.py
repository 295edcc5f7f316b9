"""What waits for the reconcile worker: its inbox, and the items in it — a report to judge, a
watch event, a watched object's new result, a tick, a new leadership verdict — and its answers:
the verdicts given that wait for the CR to hold them (`controller.spoke.worker` says when each
is answered, and how)."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass
from enum import Enum
from typing import Any

from controller.kube.api import WatchEvent
from controller.spoke.errors import NotLeaderError, StatusRejectedError, WorkerError
from statemachines import Report, Verdict
from statemachines.health import Result

__all__ = [
    "TRIGGERS",
    "Answers",
    "Inbox",
    "Item",
    "Judge",
    "Lead",
    "ObjectChanged",
    "Observe",
    "Put",
    "Tick",
    "Waiting",
    "answer_future",
    "settle_future",
]


@dataclass(frozen=True, slots=True)
class Judge:
    report: Report
    answer: Future[Verdict]
    deadline: float  # monotonic: the caller stops waiting then


@dataclass(frozen=True, slots=True)
class Waiting:
    """A verdict given, answered once the CR holds it; `changed`: its report changed the status
    (the write carries it)."""

    report: Report
    answer: Future[Verdict]
    verdict: Verdict
    deadline: float
    changed: bool


@dataclass(frozen=True, slots=True)
class Observe:
    event: WatchEvent


@dataclass(frozen=True, slots=True)
class ObjectChanged:
    """What a watched object's rule says now (docs/spec.md §8), for the object at `version`."""

    resource: str
    result: Result
    version: str


@dataclass(frozen=True, slots=True)
class Tick:
    done: Future[None]


@dataclass(frozen=True, slots=True)
class Lead:
    leader: bool


Item = Judge | Observe | ObjectChanged | Tick | Lead
TRIGGERS: dict[type, str] = {
    Judge: "report",
    Observe: "watch",
    ObjectChanged: "object",
    Tick: "tick",
    Lead: "leader",
}


class Put(Enum):
    DONE = "done"
    FULL = "full"  # no room within the timeout
    CLOSED = "closed"  # the worker stops: nothing more is taken


class Inbox:
    """At most `capacity` items, in the order they came; `put` waits for room (no polling: a
    `take` or a `close` wakes it). Open from the start: what comes before the worker starts
    waits for its first sync."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._items: deque[Item] = deque()
        self._room = threading.Condition()
        self._closed = False

    def open(self) -> None:
        with self._room:
            self._closed = False

    def put(self, item: Item, *, timeout: float | None = None) -> Put:
        with self._room:
            if not self._room.wait_for(
                lambda: self._closed or len(self._items) < self.capacity, timeout
            ):
                return Put.FULL
            if self._closed:
                return Put.CLOSED
            self._items.append(item)
            return Put.DONE

    def take(self) -> Item | None:
        """The oldest item (None: none waits)."""
        with self._room:
            if not self._items:
                return None
            self._room.notify()
            return self._items.popleft()

    def put_back(self, items: list[Item]) -> None:
        """`items`, just taken, go back first, in their order."""
        with self._room:
            self._items.extendleft(reversed(items))

    def close(self) -> None:
        """Take nothing more; what waits stays for `take` (a stop drains it)."""
        with self._room:
            self._closed = True
            self._room.notify_all()

    def clear(self) -> list[Item]:
        """Everything still waiting, taken (after a stop)."""
        with self._room:
            left, self._items = list(self._items), deque()
            self._room.notify_all()
            return left

    def __len__(self) -> int:
        with self._room:
            return len(self._items)


def settle_future(future: Future[Any], error: Exception) -> None:
    """Fail `future` unless it was answered (or withdrawn) already."""
    with contextlib.suppress(InvalidStateError):
        future.set_exception(error)


def answer_future(future: Future[Any], value: Any) -> None:
    """Answer `future` unless it was answered (or withdrawn) already."""
    with contextlib.suppress(InvalidStateError):
        future.set_result(value)


class Answers:
    """The verdicts given that wait for the CR to hold them (the sync adds and answers them, a
    stop fails what is left from its own thread), and the reports a rejected write rolled back
    with others (`suspects`: each is written on its own when it comes again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[Waiting] = []
        self.suspects: deque[Report] = deque(maxlen=64)

    def wait(self, entry: Waiting) -> None:
        with self._lock:
            self._waiting.append(entry)

    def after_write(self, *, leading: bool, unwritten: bool) -> None:
        """Answer the verdicts whose effect the CR now holds; tell those whose replica lost
        the leadership to send again; forget those whose callers stopped waiting."""
        waiting = self._take()
        if not leading:
            message = "leadership moved before the status was written; send the report again"
            for entry in waiting:
                settle_future(entry.answer, NotLeaderError(message))
        elif not unwritten:
            for entry in waiting:
                answer_future(entry.answer, entry.verdict)
        else:  # still owed: they wait for the next write
            now = time.monotonic()
            with self._lock:
                self._waiting = [w for w in waiting if w.deadline > now] + self._waiting

    def rejected(self, why: str, changes: int) -> None:
        """The write of `changes` changes was refused as invalid and rolled back. The report
        whose change it carried alone is the culprit; with more changes nobody can tell, so
        each report is sent back to be judged again (and becomes a suspect)."""
        waiting = self._take()
        carried = [w for w in waiting if w.changed]
        culprit = carried[0] if len(carried) == 1 and changes == 1 else None
        if culprit is None:
            self.suspects.extend(w.report for w in carried if w.report not in self.suspects)
        for entry in waiting:
            if entry is culprit:
                error: Exception = StatusRejectedError(f"the API server rejected the status: {why}")
            else:
                error = WorkerError(f"its status write was rejected ({why}); send the report again")
            settle_future(entry.answer, error)

    def fail(self, error: type[WorkerError], message: str) -> None:
        for entry in self._take():
            settle_future(entry.answer, error(f"{message}; send the report again"))

    def _take(self) -> list[Waiting]:
        with self._lock:
            waiting, self._waiting = self._waiting, []
            return waiting
