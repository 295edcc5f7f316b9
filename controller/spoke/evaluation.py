"""Health rules applied to watched objects away from the worker (docs/spec.md §8), so that a large
object changing often never holds up the reports.

Each watched object's newest version waits in one slot per resource, its name on a work queue
(`controller.kube.workqueue`, as a client-go controller keeps a store and a queue of keys): a
newer version replaces the one waiting, so an object that changes faster than its rule can be
applied is evaluated at its newest, never at every step in between (memory: one waiting object
per resource; time: one evaluation at a time). One thread applies the rule
(`Worker.observe_object`, which evaluates in its caller's thread) and hands the worker only the
result.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from controller.kube.controller import Controller
from controller.kube.workqueue import QueueMetrics

__all__ = ["Evaluations"]

Deliver = Callable[[str, dict[str, Any] | None, str], None]


class Evaluations:
    """`offer` the newest version of a resource's object (from its watch); `deliver(resource,
    object, version)` runs on this part's thread, the newest first come, one at a time."""

    def __init__(self, deliver: Deliver, *, metrics: QueueMetrics | None = None) -> None:
        self._deliver = deliver
        self._lock = threading.Lock()
        self._waiting: dict[str, tuple[dict[str, Any] | None, str]] = {}
        self._loop: Controller[str] = Controller("health-rules", self._sync, metrics=metrics)

    def offer(self, resource: str, obj: dict[str, Any] | None, version: str) -> None:
        with self._lock:
            self._waiting[resource] = (obj, version)
        self._loop.queue.add(resource)

    def start(self) -> None:
        self._loop.start()
        with self._lock:  # started again after a stop: what waits is still due
            for resource in self._waiting:
                self._loop.queue.add(resource)

    def stop(self, timeout: float = 5.0) -> None:
        self._loop.stop(timeout)

    @property
    def alive(self) -> bool:
        return self._loop.alive

    def problems(self, stuck_after: float) -> list[str]:
        return self._loop.problems(stuck_after)

    def _sync(self, resource: str) -> None:
        with self._lock:
            waiting = self._waiting.pop(resource, None)
        if waiting is not None:
            self._deliver(resource, *waiting)
