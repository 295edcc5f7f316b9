"""One way to run a part on a thread of its own: start, stop within a deadline, alive, and the
error it died of (a part that dies is seen by the liveness probe, not lost in a log)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

__all__ = ["Runnable"]

log = logging.getLogger(__name__)


class Runnable:
    """Runs `run()` on a daemon thread named `name`; `stop()` calls `interrupt()` (which must
    make `run` return) and waits up to its deadline."""

    def __init__(self, name: str, run: Callable[[], None], interrupt: Callable[[], None]) -> None:
        self.name = name
        self._run, self._interrupt = run, interrupt
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def start(self) -> None:
        self.error = None
        self._thread = threading.Thread(target=self._main, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> bool:
        """Interrupt and wait up to `timeout`; False when it is still running (it ends with
        the call it is in)."""
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

    def _main(self) -> None:
        try:
            self._run()
        except BaseException as error:  # the probe reports it; the process decides
            self.error = error
            log.exception("%s died", self.name)
