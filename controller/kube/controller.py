"""The one loop around a work queue, as controller-runtime's controller runs it: take a key,
`sync(key)`, and decide what happens to the key from what the sync said.

- It returns None: done; the key's run of failures is forgotten.
- It returns `Result(requeue_after=s)`: done, and queued again in `s` seconds (a timer, a resync).
- It returns `Result(retry=True)`, or raises: queued again after the key's rate-limited delay
  (`retry_after` a floor, as a server's `Retry-After`); an exception other than a `KubeError` is
  a bug and is logged with its traceback, but never ends the loop.

The loop is a part of its process (`controller.kube.runnable`): `start`, `stop` (the queue shut
down, draining when asked), `alive`, `stuck_for` (how long the key in hand has been worked on)
and `problem`, which the liveness probe reads: the thread died, or one sync outlasted a bound.
Made `held`, it takes no key before `release()`, as controller-runtime's workers wait for their
caches to be synced.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from controller.kube.api import KubeError
from controller.kube.ratelimit import RateLimiter
from controller.kube.runnable import Runnable
from controller.kube.workqueue import QueueMetrics, WorkQueue

__all__ = ["Controller", "Result"]

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Result:
    """What a sync asks for its key: again in `requeue_after` seconds, or (`retry`) again after
    its rate-limited delay, at least `retry_after`."""

    requeue_after: float | None = None
    retry: bool = False
    retry_after: float | None = None


Sync = Callable[[K], Result | None]


class Controller(Generic[K]):
    """`sync(key)` for each key of its queue, on a thread named `name`; see the module
    docstring. `drain=True`: a stop first syncs what is queued then; `held=True`: no key is
    taken before `release()`."""

    def __init__(
        self,
        name: str,
        sync: Sync[K],
        *,
        rate_limiter: RateLimiter[K] | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics: QueueMetrics | None = None,
        drain: bool = False,
        held: bool = False,
    ) -> None:
        self.name = name
        self.queue: WorkQueue[K] = WorkQueue(
            rate_limiter=rate_limiter, clock=clock, metrics=metrics
        )
        self._sync = sync
        self._drain = drain
        self._released = threading.Event()
        if not held:
            self._released.set()
        self._runner = Runnable(name, self._run, self._interrupt)

    def start(self) -> None:
        self.queue.reopen()
        self._runner.start()

    def release(self) -> None:
        """Start taking keys (a `held` controller, once its caches are filled)."""
        self._released.set()

    def _interrupt(self) -> None:
        self.queue.shut_down(drain=self._drain)
        self._released.set()  # a held loop ends too: its queue answers None

    def stop(self, timeout: float = 5.0) -> bool:
        """Shut the queue down and wait up to `timeout`; False when a sync is still running
        (it ends with the call it is in)."""
        return self._runner.stop(timeout)

    @property
    def alive(self) -> bool:
        return self._runner.alive

    @property
    def error(self) -> BaseException | None:
        return self._runner.error

    def stuck_for(self) -> float:
        """Seconds the oldest key in hand has been worked on (0: none)."""
        return max(self.queue.in_progress(), default=0.0)

    def problem(self, stuck_after: float) -> str | None:
        """Why the loop is not doing its job: its thread died, or the key in hand has been
        worked on for more than `stuck_after` seconds; None otherwise."""
        found = self._runner.problem()
        if found is None and self.stuck_for() > stuck_after:
            found = f"{self.name} has been in one sync for more than {stuck_after:g}s"
        return found

    def problems(self, stuck_after: float) -> list[str]:
        """`problem`, as a part says it (`controller.kube.runnable.Supervised`)."""
        problem = self.problem(stuck_after)
        return [] if problem is None else [problem]

    def _run(self) -> None:
        queue = self.queue
        self._released.wait()
        while (key := queue.get()) is not None:
            try:
                result = self._sync(key)
            except KubeError as error:
                result = Result(retry=True, retry_after=error.retry_after)
                log.debug("%s: %s failed: %s", self.name, key, error)
            except Exception:
                result = Result(retry=True)
                log.exception("%s: syncing %s failed unexpectedly", self.name, key)
            finally:
                queue.done(key)
            if result is not None and result.retry:
                queue.add_rate_limited(key, retry_after=result.retry_after)
                continue
            queue.forget(key)
            if result is not None and result.requeue_after is not None:
                queue.add_after(key, result.requeue_after)
