"""The clocks of the I/O side: hub replication, its metrics and leader election.

Wall time is what goes into a Lease (other replicas compare it); monotonic time decides
waits, backoff and when this replica's own leadership ends (immune to wall-clock steps).
The state machines' clock is another matter: the worker injects a `() -> datetime`.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Protocol

__all__ = ["LeaseClock", "MonotonicClock", "SystemClock"]


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
