"""The work queue of a controller, as client-go's `workqueue` keeps it.

- A key is queued once however often it is added (`add`); a key being processed that is added
  again is processed once more after `done`, never by two workers at once.
- `add_after(key, delay)` queues it later; the earlier of two pending times wins.
- `add_rate_limited(key)` queues it after that key's own backoff (exponential with full jitter,
  `controller.kube.backoff`), which grows with each call until `forget(key)`; one failing key
  never delays the others.
- `shut_down(drain=True)` lets `get` hand out what is queued now (not what waits for later) and
  then answer None; `drain=False` answers None at once.

Time is the injected `clock` (monotonic seconds): a test moves it and calls `wake()`.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from controller.kube.backoff import Backoff

__all__ = ["WorkQueue"]

K = TypeVar("K", bound=Hashable)
_MAX_WAIT = 1.0  # a wait re-reads the clock at least this often (an injected clock moves)


class WorkQueue(Generic[K]):
    def __init__(
        self, *, backoff: Backoff | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._backoff = backoff or Backoff(initial=0.005, maximum=1000.0)
        self._clock = clock
        self._cond = threading.Condition()
        self._queue: deque[K] = deque()  # ready, in order
        self._dirty: set[K] = set()  # queued or to be queued again after `done`
        self._processing: set[K] = set()
        self._waiting: dict[K, float] = {}  # key -> when it is due
        self._heap: list[tuple[float, int, K]] = []
        self._sequence = 0  # orders equal times in the heap
        self._failures: dict[K, int] = {}
        self._shutting_down = False
        self._drain = False

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
            if key in self._waiting and self._waiting[key] <= due:
                return
            self._waiting[key] = due
            self._sequence += 1
            heapq.heappush(self._heap, (due, self._sequence, key))
            self._cond.notify_all()

    def add_rate_limited(self, key: K) -> float:
        """Queue `key` after its next backoff; the delay chosen."""
        with self._cond:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
        delay = self._backoff.delay(failures)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """`key` succeeded: its backoff starts again from the beginning."""
        with self._cond:
            self._failures.pop(key, None)

    def requeues(self, key: K) -> int:
        with self._cond:
            return self._failures.get(key, 0)

    # --- taking --------------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> K | None:
        """The next key (the caller must call `done` with it), or None once shut down, or when
        `timeout` passed first."""
        end = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                self._promote()
                if self._queue and (not self._shutting_down or self._drain):
                    key = self._queue.popleft()
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                if self._shutting_down:
                    return None
                wait = _MAX_WAIT
                if self._heap:
                    wait = min(wait, max(self._heap[0][0] - self._clock(), 0.0))
                if end is not None:
                    left = end - time.monotonic()
                    if left <= 0:
                        return None
                    wait = min(wait, left)
                self._cond.wait(wait)

    def done(self, key: K) -> None:
        with self._cond:
            self._processing.discard(key)
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

    @property
    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def wake(self) -> None:
        """Look at the clock again now (after a test moved it)."""
        with self._cond:
            self._cond.notify_all()

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

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
                self._cond.wait(min(left, _MAX_WAIT))

    def _add(self, key: K) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._queue.append(key)
        self._cond.notify_all()

    def _promote(self) -> None:
        """Move what is due from the heap to the queue (under `_cond`)."""
        now = self._clock()
        while self._heap and self._heap[0][0] <= now:
            due, _, key = heapq.heappop(self._heap)
            if self._waiting.get(key) != due:
                continue  # superseded by an earlier time
            del self._waiting[key]
            self._add(key)
