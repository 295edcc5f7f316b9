"""The controller's HTTP servers' common ground: a bounded worker pool and a daemon thread.

The report API, the metrics and the probe servers all take connections from a fleet's collectors, a
Prometheus or a kubelet. The standard library's servers listen with a backlog of 5 and give every
connection a thread of its own: 20 reporters starting together lost connections, and 1,000 held
1,000 threads. `BoundedPool` listens with a backlog of 1,024 and serves with at most `workers`
threads, started as connections need them; accepted connections wait in a bounded queue, and beyond
it in the kernel's backlog. A silent connection is reclaimable: when a connection waits and no
worker is free, the oldest one silent for long enough is closed, so that idle or slow clients cannot
hold the pool. Long enough is a second for a keep-alive connection idle after an answer (its client
was served, and reconnects), and 5 s for one that has sent nothing yet (its client may only be slow
to write, as a collector on a loaded node in a burst).

An idle server costs nothing: the accepting thread sleeps until a connection arrives or `shutdown()`
wakes it through a socket pair (the standard library's loop wakes every `poll_interval` to look for
a shutdown: 20 wake-ups a second, per server, at the 50 ms it needs to stop quickly). It wakes on a
timer only while connections wait for a busy pool, to reclaim a silent one when it is due.
"""

from __future__ import annotations

import contextlib
import queue
import selectors
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from controller.kube.runnable import Runnable

__all__ = ["BoundedPool", "ServerThread"]

_Connection = tuple[Any, Any, float]  # (socket, client address) as accepted, and when


class BoundedPool(socketserver.TCPServer):
    """A TCP server whose connections are served by `workers` threads (set before `__init__`).

    Put it first in the bases of a standard-library server class: it replaces the thread per
    connection of `ThreadingMixIn`.
    """

    request_queue_size = 1024  # the listen backlog; Linux caps it at net.core.somaxconn
    workers = 8
    waiting_limit = 1024  # accepted connections waiting for a worker
    first_byte_timeout = 10.0  # a connection that sends nothing is closed after this long
    reclaim_idle_after = 1.0  # a keep-alive connection between requests
    reclaim_new_after = 5.0  # a connection that has sent nothing yet
    worker_name = "server-worker"

    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept until `shutdown()`, sleeping on the listening socket and a wake-up pipe
        (`poll_interval` is not used: nothing polls)."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(self.socket, selectors.EVENT_READ)
                selector.register(self._wake_reader, selectors.EVENT_READ)
                while not self._stopping:
                    ready = selector.select(self._due_in())
                    if self._stopping:
                        break
                    if any(key.fileobj is self.socket for key, _ in ready):
                        self._handle_request_noblock()  # type: ignore[attr-defined]
                    self.service_actions()
        finally:
            self._stopped.set()

    def shutdown(self) -> None:
        """Stop `serve_forever` (from another thread) and wait until it has returned."""
        self._stopping = True
        with contextlib.suppress(OSError):  # the loop ended already
            self._wake_writer.send(b"\0")
        self._stopped.wait()

    def _due_in(self) -> float | None:
        """None (sleep until woken) unless connections wait for a busy pool: then until the
        oldest silent connection may be reclaimed."""
        with self._pool_lock:
            if self._free >= self._waiting.qsize() or not self._silent:
                return None
            return max(min(self._silent.values()) - time.monotonic(), 0.0) + 0.001

    def server_activate(self) -> None:
        super().server_activate()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._stopping, self._stopped = False, threading.Event()
        self._pool_lock = threading.Condition()
        self._waiting: queue.Queue[_Connection | None] = queue.Queue(self.waiting_limit)
        self._silent: dict[Any, float] = {}  # reclaimable from when on, oldest first
        self._serving: dict[int, Any] = {}  # by worker thread: the connection it serves
        self._free = 0
        self._closing = False
        self._threads: list[Runnable] = []  # started as connections need them

    def process_request(self, request: Any, client_address: Any) -> None:
        """On the accepting thread: queue the connection; a full queue stops accepting."""
        while True:
            try:
                self._waiting.put((request, client_address, time.monotonic()), timeout=0.05)
                break
            except queue.Full:
                if self._closing:
                    self.shutdown_request(request)
                    return
                self._reclaim_silent()
        with self._pool_lock:
            hire = self._free < self._waiting.qsize() and len(self._threads) < self.workers
            if hire and not self._closing:
                worker = Runnable(self.worker_name, self._work, lambda: None)  # ends on a None
                self._threads.append(worker)
                worker.start()
        self.service_actions()

    def service_actions(self) -> None:
        """After each connection and every poll of the accepting thread: free a worker for the
        connections waiting, if none is free."""
        with self._pool_lock:
            starved = self._free < self._waiting.qsize()
        if starved:
            self._reclaim_silent()

    def pool_problems(self) -> list[str]:
        """The workers that died (none once the server closes)."""
        with self._pool_lock:
            workers = [] if self._closing else list(self._threads)
        return [problem for worker in workers if (problem := worker.problem()) is not None]

    def crowded(self) -> bool:
        """Connections wait for a worker: a keep-alive connection should end after its answer."""
        return not self._waiting.empty()

    @contextlib.contextmanager
    def reclaimable(self, connection: Any, *, after: float | None = None) -> Iterator[None]:
        """While in this block, `connection` waits for its client and may be closed for others
        `after` seconds from now (by default `reclaim_idle_after`)."""
        due = time.monotonic() + (self.reclaim_idle_after if after is None else after)
        with self._pool_lock:
            self._silent[connection] = due
        try:
            yield
        finally:
            with self._pool_lock:
                self._silent.pop(connection, None)

    def serve_connection(self, request: Any, client_address: Any) -> None:
        """One connection, on a worker: override to wrap it (TLS) before the handler runs."""
        self.finish_request(request, client_address)

    def replace_connection(self, wrapped: Any) -> None:
        """The worker's connection is `wrapped` (in TLS) from now on, for `close_connections`."""
        with self._pool_lock:
            self._serving[threading.get_ident()] = wrapped

    def close_connections(self, timeout: float) -> None:
        """Shut every connection's read side: idle ones end, busy ones finish their answer."""
        with self._pool_lock:
            for connection in self._serving.values():
                with contextlib.suppress(OSError):  # already closed by the client
                    # The socket's own shutdown: SSLSocket's would drop TLS for the answer.
                    socket.socket.shutdown(connection, socket.SHUT_RD)
            self._pool_lock.wait_for(lambda: not self._serving, timeout)

    def server_close(self) -> None:
        super().server_close()
        if not hasattr(self, "_threads"):
            return  # never activated
        self._wake_reader.close()
        self._wake_writer.close()
        with self._pool_lock:
            self._closing = True
        with contextlib.suppress(queue.Empty):
            while True:
                waiting = self._waiting.get_nowait()
                if waiting is not None:
                    self.shutdown_request(waiting[0])
        self.close_connections(0.0)
        for _ in self._threads:
            self._waiting.put(None)
        for worker in self._threads:
            worker.stop(1.0)

    def _work(self) -> None:
        while True:
            with self._pool_lock:
                self._free += 1
            taken = self._waiting.get()
            with self._pool_lock:
                self._free -= 1
            if taken is None:
                return
            request, client_address, accepted = taken
            with self._pool_lock:
                self._serving[threading.get_ident()] = request
            try:
                if self._first_byte(request, accepted):
                    self.serve_connection(request, client_address)
            except Exception:
                self.handle_error(request, client_address)
            finally:
                self.shutdown_request(request)
                with self._pool_lock:
                    del self._serving[threading.get_ident()]
                    self._pool_lock.notify_all()

    def _first_byte(self, request: socket.socket, accepted: float) -> bool:
        """Wait, reclaimably, until the client sends something (a request, a TLS hello); the
        time it waited in the queue counts."""
        request.settimeout(self.first_byte_timeout)
        after = accepted + self.reclaim_new_after - time.monotonic()
        with self.reclaimable(request, after=after):
            try:
                return bool(request.recv(1, socket.MSG_PEEK))
            except OSError:  # timed out, reset, or reclaimed
                return False

    def _reclaim_silent(self) -> None:
        with self._pool_lock:
            if not self._silent:
                return
            now = time.monotonic()
            oldest = next((c for c, due in self._silent.items() if due <= now), None)
            if oldest is None:
                return
            del self._silent[oldest]
        with contextlib.suppress(OSError):
            socket.socket.shutdown(oldest, socket.SHUT_RD)


class ServerThread:
    """Builds the server on `start()` (port 0 picks a free port) and serves it until `stop()`."""

    def __init__(self, name: str, build: Callable[[], socketserver.BaseServer]) -> None:
        self._name = name
        self._build = build
        self._server: socketserver.BaseServer | None = None
        self._runner: Runnable | None = None

    def start(self) -> None:
        self._server = self._build()
        self._runner = Runnable(self._name, self._server.serve_forever, self._server.shutdown)
        self._runner.start()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])  # type: ignore[index]

    def problems(self, stuck_after: float) -> list[str]:
        """The accepting thread, or a worker of its pool, died."""
        server, runner = self._server, self._runner
        if server is None or runner is None:
            return []
        found = [] if (problem := runner.problem()) is None else [problem]
        return found + (server.pool_problems() if isinstance(server, BoundedPool) else [])

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is None:
            return
        if self._runner is not None:
            self._runner.stop(timeout)
        self._server.server_close()
        self._server = self._runner = None
