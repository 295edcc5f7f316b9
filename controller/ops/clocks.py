"""The clocks: the state machines' (`MachineClock`, injected into the worker so that tests and
the demo move time) and those of the I/O side (hub replication, its metrics, leader election).

Wall time is what goes into a Lease (other replicas compare it); monotonic time decides
waits, backoff and when this replica's own leadership ends (immune to wall-clock steps).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["LeaseClock", "MachineClock", "MonotonicClock", "SystemClock", "utc_now"]

MachineClock = Callable[[], datetime]
"""What the state machines read the time from (the core takes `now`; the worker asks this)."""


def utc_now() -> datetime:
    return datetime.now(UTC)


class MonotonicClock(Protocol):
    def monotonic(self) -> float: ...


class LeaseClock(MonotonicClock, Protocol):
    """Wall time for the Lease's fields, monotonic time for everything this replica decides."""

    def now(self) -> datetime: ...


class SystemClock:
    """The real clocks; tests that need to move time inject their own."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()
