"""A deadline for a whole HTTP call, whatever the server does. A socket's read timeout bounds
each read, not the call: a server that sends a byte just before every timeout, in its headers or
its body, would hold a caller for ever. So a call runs under a `Deadline`; every connection
urllib3 opens or reuses for it registers with it, and at the deadline one thread shuts their
sockets down, which makes the blocked read return at once. Used by the seam (every verb, and
a watch until its response begins) and by the report API's client.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final

from urllib3 import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.connection import HTTPConnection, HTTPSConnection

from controller.kube.runnable import Runnable

__all__ = [
    "POOL_CLASSES",
    "Deadline",
    "WatchedConnection",
    "WatchedTLSConnection",
    "remaining",
    "within",
]


class Deadline:
    """The sockets of one call, shut down at `at` (a monotonic time) unless stopped first."""

    def __init__(self, at: float) -> None:
        self.at = at
        self._lock = threading.Lock()
        self._connections: list[_Watched] = []
        self.fired = self.stopped = False
        _ALARM.add(self)

    def watch(self, connection: _Watched) -> None:
        """`connection` carries this call now. Raises TimeoutError when the deadline passed
        (urllib3 retrying the call)."""
        with self._lock:
            if self.fired:
                raise TimeoutError("the call's deadline passed")
            connection.deadline = self
            self._connections.append(connection)

    def stop(self) -> None:
        """The call ended, or its bounded part did (a watch's response began)."""
        with self._lock:
            self.stopped = True  # the alarm drops it when it comes first

    def fire(self) -> None:
        with self._lock:
            if self.stopped:
                return
            self.fired = True
            for connection in self._connections:
                # back in the pool and taken by a later call, it is that call's now
                if connection.deadline is self and connection.sock is not None:
                    with contextlib.suppress(OSError):  # closed already
                        connection.sock.shutdown(socket.SHUT_RDWR)


@contextlib.contextmanager
def within(seconds: float) -> Iterator[Deadline]:
    """Run the block's HTTP calls (through `POOL_CLASSES` or the watched connections) under
    one deadline `seconds` from now; it stops when the block ends."""
    deadline = Deadline(time.monotonic() + seconds)
    token = _CALL.set(deadline)
    try:
        yield deadline
    finally:
        _CALL.reset(token)
        deadline.stop()


def remaining() -> float | None:
    """The seconds left to the running call (what else it does, such as running a credential
    plugin, counts too); None outside a call."""
    deadline = _CALL.get()
    return None if deadline is None else deadline.at - time.monotonic()


class _Alarm:
    """One thread for every call's deadline, started with the first call (a thread per call
    cost more than the call itself). It sleeps until the earliest deadline still running;
    stopped ones are dropped when their time comes first."""

    def __init__(self) -> None:
        self._ready = threading.Condition()
        self._due: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self.runner: Runnable | None = None

    def add(self, deadline: Deadline) -> None:
        with self._ready:
            heapq.heappush(self._due, (deadline.at, next(self._order), deadline))
            if self.runner is None:  # it lives as long as the process: nothing stops it
                self.runner = Runnable("deadlines", self._run, lambda: None)
                self.runner.start()
            if self._due[0][2] is deadline:
                self._ready.notify()

    def _run(self) -> None:
        while True:
            with self._ready:
                while self._due and self._due[0][2].stopped:
                    heapq.heappop(self._due)
                if not self._due:
                    self._ready.wait()
                    continue
                wait = self._due[0][0] - time.monotonic()
                if wait > 0:
                    self._ready.wait(wait)
                    continue
                _, _, due = heapq.heappop(self._due)
            due.fire()


_ALARM = _Alarm()


def _after_fork() -> None:
    global _ALARM  # noqa: PLW0603 - the parent's thread does not survive a fork
    _ALARM = _Alarm()


os.register_at_fork(after_in_child=_after_fork)


def alarm_problem() -> str | None:
    """Why calls are not bounded any more: the deadlines' thread died (liveness)."""
    runner = _ALARM.runner
    return None if runner is None else runner.problem()


_CALL: Final[ContextVar[Deadline | None]] = ContextVar("http_call_deadline", default=None)


class WatchedConnection(HTTPConnection):
    """An HTTP connection that registers with the running call's deadline, if any."""

    deadline: Deadline | None = None  # the call it last carried

    def request(self, *args: Any, **kwargs: Any) -> None:
        self.deadline = None
        if (deadline := _CALL.get()) is not None:
            deadline.watch(self)
        super().request(*args, **kwargs)


class WatchedTLSConnection(HTTPSConnection):
    """WatchedConnection over TLS."""

    deadline: Deadline | None = None

    def request(self, *args: Any, **kwargs: Any) -> None:
        self.deadline = None
        if (deadline := _CALL.get()) is not None:
            deadline.watch(self)
        super().request(*args, **kwargs)


_Watched = WatchedConnection | WatchedTLSConnection


class _WatchedPool(HTTPConnectionPool):
    ConnectionCls = WatchedConnection


class _WatchedTLSPool(HTTPSConnectionPool):
    ConnectionCls = WatchedTLSConnection


# A PoolManager's `pool_classes_by_scheme`: its connections register with the call's deadline.
POOL_CLASSES: Final = {"http": _WatchedPool, "https": _WatchedTLSPool}
