"""The one clock a test moves: wall time for the state machines (`clock()`, `clock.now()`) and
monotonic time for what waits (`clock.monotonic()`), moved together by `move`. Light (no
client, no server), so every test module and benchmark can import it."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

__all__ = ["T0", "FakeClock"]

T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


class FakeClock:
    """Thread-safe; moved only by the test. Its monotonic seconds are its wall time's."""

    def __init__(self, start: datetime = T0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def now(self) -> datetime:
        return self()

    def monotonic(self) -> float:
        return self().timestamp()

    def move(self, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(**delta)
            return self._now
