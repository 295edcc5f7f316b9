"""One way to run a part on a thread of its own: start, stop within a deadline, alive, the error
it died of, and `problem()`, what the liveness probe reads (a part that dies is seen there, not
lost in a log). Every thread of a process starts here, named as its part, down to the OS
thread's name (`top -H`, `ps -T` and `/proc/<pid>/task/*/comm` say which part a thread is)."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Runnable", "Supervised", "name_thread"]

log = logging.getLogger(__name__)


@runtime_checkable
class Supervised(Protocol):
    """A part that says why it is not doing its job (the liveness probe asks): one line for each
    of its threads that died, or whose loop has been inside one sync for more than
    `stuck_after` seconds; nothing while all is well (or while it is stopped)."""

    def problems(self, stuck_after: float) -> list[str]: ...


class Runnable:
    """Runs `run()` on a daemon thread named `name`; `stop()` calls `interrupt()` (which must
    make `run` return) and waits up to its deadline."""

    def __init__(self, name: str, run: Callable[[], None], interrupt: Callable[[], None]) -> None:
        self.name = name
        self._run, self._interrupt = run, interrupt
        self._thread: threading.Thread | None = None
        self._stopping = False
        self.error: BaseException | None = None

    def start(self) -> None:
        self.error, self._stopping = None, False
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Interrupt and wait up to `timeout`; False when it is still running (it ends with
        the call it is in)."""
        self._stopping = True
        self._interrupt()
        thread = self._thread
        if thread is None:
            return True
        thread.join(max(timeout, 0.0))
        if thread.is_alive():
            log.warning("%s is still inside a call; it ends with it", self.name)
            return False
        return True

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def problem(self) -> str | None:
        """Why the thread is not running though it was started and not stopped: it died of an
        error (logged when it did, with its traceback) or returned; None otherwise."""
        thread = self._thread
        if thread is None or self._stopping or thread.is_alive():
            return None
        if self.error is not None:
            return f"{self.name} died ({type(self.error).__name__})"
        return f"{self.name} ended"

    def _main(self) -> None:
        name_thread(self.name)
        try:
            self._run()
        except BaseException as error:  # the probe reports it; the process decides
            self.error = error
            log.exception("%s died", self.name)


def name_thread(name: str) -> None:
    """Give the running OS thread `name` (Linux keeps its first 15 bytes; elsewhere nothing)."""
    path = f"/proc/self/task/{threading.get_native_id()}/comm"
    with contextlib.suppress(OSError), open(path, "w", encoding="ascii", errors="ignore") as comm:
        comm.write(name[:15])
