"""When to try again after a failed call to the API server: exponential backoff with jitter.

`Backoff` is the policy (how long after the n-th failure); `Retry` is the state of one kind of
call (how many failures in a row, and the earliest moment of the next attempt), on the
monotonic clock: a retry is about I/O, not about status, so it never follows the injected clock
of the state machines (a frozen test clock must not freeze a retry).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

__all__ = ["Backoff", "Retry"]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential growth from `initial` up to `maximum`, with full jitter (AWS's advice:
    retries of many clients do not line up)."""

    initial: float = 0.2
    maximum: float = 30.0

    def delay(self, failures: int) -> float:
        return random.uniform(0, min(self.maximum, self.initial * 2 ** max(failures - 1, 0)))


class Retry:
    """Failures in a row of one kind of call; `due` once the backoff after the last one ran out."""

    def __init__(self, backoff: Backoff | None = None) -> None:
        self._backoff = backoff or Backoff(initial=0.25)
        self.failures = 0
        self._at = 0.0

    def failed(self) -> float:
        """Count a failure; the seconds until the next attempt."""
        self.failures += 1
        delay = self._backoff.delay(self.failures)
        self._at = time.monotonic() + delay
        return delay

    def succeeded(self) -> None:
        self.failures = 0
        self._at = 0.0

    @property
    def due(self) -> bool:
        return time.monotonic() >= self._at

    def seconds_left(self) -> float:
        return max(0.0, self._at - time.monotonic())
