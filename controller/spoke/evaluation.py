"""Health rules applied to watched objects away from the worker (docs/spec.md §8), so that a large
object changing often never holds up the reports.

Each watched object's newest version waits in one slot per resource; a newer version replaces
the one waiting, so an object that changes faster than its rule can be applied is evaluated at
its newest, never at every step in between (memory: one waiting object per resource; time: one
evaluation at a time). One thread applies the rule (`Worker.observe_object`, which evaluates in
its caller's thread) and hands the worker only the result.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["Evaluations"]

log = logging.getLogger(__name__)

Deliver = Callable[[str, dict[str, Any] | None, str], None]


class Evaluations:
    """`offer` the newest version of a resource's object (from its watch); `deliver(resource,
    object, version)` runs on this part's thread, the newest first come, one at a time."""

    def __init__(self, deliver: Deliver) -> None:
        self._deliver = deliver
        self._waiting: dict[str, tuple[dict[str, Any] | None, str]] = {}
        self._wake = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None

    def offer(self, resource: str, obj: dict[str, Any] | None, version: str) -> None:
        with self._wake:
            self._waiting.pop(resource, None)  # the newest goes to the back of the line
            self._waiting[resource] = (obj, version)
            self._wake.notify()

    def start(self) -> None:
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name="health-rules", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        with self._wake:
            self._stopping = True
            self._wake.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while (taken := self._take()) is not None:
            resource, (obj, version) = taken
            try:
                self._deliver(resource, obj, version)
            except Exception:  # a bug must not end the only evaluator
                log.exception("applying the health rule of %s failed", resource)

    def _take(self) -> tuple[str, tuple[dict[str, Any] | None, str]] | None:
        with self._wake:
            self._wake.wait_for(lambda: self._stopping or bool(self._waiting))
            if self._stopping:
                return None
            resource = next(iter(self._waiting))
            return resource, self._waiting.pop(resource)
