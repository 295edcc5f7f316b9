"""The work queue of a controller, as client-go's `workqueue` keeps it.

- A key is queued once however often it is added (`add`); a key being processed that is added
  again is processed once more after `done`, never by two workers at once.
- `add_after(key, delay)` queues it later; a key waiting for later has one entry, and the
  earlier of two times wins.
- `add_rate_limited(key)` queues it after its rate limiter's delay
  (`controller.kube.ratelimit`: the key's own backoff, and a bucket over every key; a server's
  `Retry-After` a floor), which grows with each call until `forget(key)`.
- `shut_down(drain=True)` lets `get` hand out what is queued now (not what waits for later) and
  then answer None; `drain=False` answers None at once; `reopen()` takes keys again (a part
  started again, as for a new leadership term).
- Nothing polls: a `get` sleeps until a key is added or the next waiting one is due.
- client-go's metrics (`QueueMetrics`): depth, adds, how long a key waited and how long it was
  worked on, retries, and the work in progress.

Time is the injected `clock` (monotonic seconds): a test moves it and calls `wake()`.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from controller.kube.ratelimit import RateLimiter, default_rate_limiter

__all__ = ["QueueMetrics", "WorkQueue"]

K = TypeVar("K", bound=Hashable)


class QueueMetrics(Protocol):
    """Where a queue says how it is doing (`controller.ops.metrics.WorkQueueMetrics`); `follow`
    gives it what is read when it is asked (the depth, the work in progress)."""

    def follow(self, depth: Callable[[], int], in_progress: Callable[[], list[float]]) -> None: ...

    def added(self) -> None: ...

    def taken(self, waited: float) -> None: ...

    def done(self, worked: float) -> None: ...

    def retried(self) -> None: ...


class WorkQueue(Generic[K]):
    def __init__(
        self,
        *,
        rate_limiter: RateLimiter[K] | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics: QueueMetrics | None = None,
    ) -> None:
        self._clock = clock
        self._limiter: RateLimiter[K] = rate_limiter or default_rate_limiter(clock=clock)
        self._metrics = metrics
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()  # ready, in order
        self._dirty: dict[K, float] = {}  # queued (or to be queued again after `done`): since
        self._processing: dict[K, float] = {}  # handed out: since
        self._waiting: dict[K, float] = {}  # key -> when it is due
        self._heap: list[tuple[float, int, K]] = []  # one entry per waiting key
        self._sequence = 0  # orders equal times in the heap
        self._shutting_down = False
        self._drain = False
        if metrics is not None:
            metrics.follow(self.__len__, self.in_progress)

    # --- adding --------------------------------------------------------------------------------

    def add(self, key: K) -> None:
        with self._cond:
            self._add(key)

    def add_after(self, key: K, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._shutting_down:
                return
            due = self._clock() + delay
            known = self._waiting.get(key)
            if known is not None and known <= due:
                return
            self._waiting[key] = due
            self._sequence += 1
            entry = (due, self._sequence, key)
            if known is None:
                heapq.heappush(self._heap, entry)
            else:  # earlier than its entry: move that entry, never add a second one
                self._heap = [e if e[2] != key else entry for e in self._heap]
                heapq.heapify(self._heap)
            self._cond.notify_all()

    def add_rate_limited(self, key: K, *, retry_after: float | None = None) -> float:
        """Queue `key` after its rate limiter's delay (at least `retry_after`); the delay."""
        delay = self._limiter.when(key, retry_after=retry_after)
        if self._metrics is not None:
            self._metrics.retried()
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """`key` succeeded: its backoff starts again from the beginning."""
        self._limiter.forget(key)

    def requeues(self, key: K) -> int:
        return self._limiter.retries(key)

    # --- taking --------------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> K | None:
        """The next key (the caller must call `done` with it), or None once shut down, or when
        `timeout` (real seconds) passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote()
                if self._queue and (not self._shutting_down or self._drain):
                    key = self._queue.popleft()
                    now = self._clock()
                    since = self._dirty.pop(key, now)
                    self._processing[key] = now
                    if self._metrics is not None:
                        self._metrics.taken(now - since)
                    return key
                if self._shutting_down:
                    return None
                wait = None if not self._heap else max(self._heap[0][0] - self._clock(), 0.0)
                if end is not None:
                    left = end - time.monotonic()
                    if left <= 0:
                        return None
                    wait = left if wait is None else min(wait, left)
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        with self._cond:
            since = self._processing.pop(key, None)
            if since is not None and self._metrics is not None:
                self._metrics.done(self._clock() - since)
            if key in self._dirty:
                self._queue.append(key)
            self._cond.notify_all()

    # --- the rest ------------------------------------------------------------------------------

    def shut_down(self, *, drain: bool = False) -> None:
        with self._cond:
            self._shutting_down, self._drain = True, drain
            self._waiting.clear()
            self._heap.clear()
            self._cond.notify_all()

    def reopen(self) -> None:
        """Take keys again after `shut_down` (what was queued then is dropped)."""
        with self._cond:
            if self._shutting_down:
                self._shutting_down, self._drain = False, False
                self._queue.clear()
                self._dirty.clear()

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def wake(self) -> None:
        """Look at the clock again now (after a test moved it)."""
        with self._cond:
            self._cond.notify_all()

    def __len__(self) -> int:
        """The depth: keys ready to be handed out."""
        with self._cond:
            return len(self._queue)

    def in_progress(self) -> list[float]:
        """For each key handed out and not done yet, how long it has been (client-go's
        unfinished work, and its longest running processor)."""
        with self._cond:
            now = self._clock()
            return [now - since for since in self._processing.values()]

    def due_in(self, key: K) -> float | None:
        """Seconds until `key`, waiting for later, is queued (None: it does not wait)."""
        with self._cond:
            due = self._waiting.get(key)
            return None if due is None else max(due - self._clock(), 0.0)

    def idle(self) -> bool:
        """Nothing ready and nothing in progress (keys waiting for later do not count)."""
        with self._cond:
            self._promote()
            return not self._queue and not self._processing

    def wait_idle(self, timeout: float) -> bool:
        end = time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote()
                if not self._queue and not self._processing:
                    return True
                left = end - time.monotonic()
                if left <= 0:
                    return False
                due = max(self._heap[0][0] - self._clock(), 0.0) if self._heap else left
                self._cond.wait(min(left, due))

    def _add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty[key] = self._clock()
        if self._metrics is not None:
            self._metrics.added()
        if key not in self._processing:
            self._queue.append(key)
        self._cond.notify_all()

    def _promote(self) -> None:
        """Move what is due from the heap to the queue (under `_cond`)."""
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            _, _, key = heapq.heappop(self._heap)
            del self._waiting[key]
            self._add(key)
