"""When to try again after a failed call to the API server: exponential backoff with jitter.

`backoff_delay` is the rule (full jitter, a server's `Retry-After` as a floor), `Backoff` the
policy of one kind of call (how long after the n-th failure); `Retry` is the state of one kind of
call (how many failures in a row, and the earliest moment of the next attempt), on the
monotonic clock: a retry is about I/O, not about status, so it never follows the injected clock
of the state machines (a frozen test clock must not freeze a retry).
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Final

__all__ = ["RETRY_AFTER_CEILING", "Backoff", "Retry", "backoff_delay"]

RETRY_AFTER_CEILING: Final = 600.0
"""A `Retry-After` is honoured up to ten minutes; a larger one is a misbehaving server."""
_RNG: Final = random.Random()


def backoff_delay(
    failures: int,
    *,
    base: float,
    cap: float,
    rng: random.Random = _RNG,
    retry_after: float | None = None,
) -> float:
    """Full jitter (uniform in [0, min(cap, base * 2**(failures-1))]) spreads the retries of a
    fleet of clients after an outage (AWS's advice); a server's `Retry-After` is a floor, never
    shortened."""
    ceiling = min(cap, base * 2.0 ** min(max(failures - 1, 0), 62))
    delay = rng.uniform(0.0, ceiling)
    if retry_after is not None and math.isfinite(retry_after):
        delay = max(delay, min(max(retry_after, 0.0), RETRY_AFTER_CEILING))
    return delay


@dataclass(frozen=True, slots=True)
class Backoff:
    """Exponential growth from `initial` up to `maximum`, with full jitter (`backoff_delay`)."""

    initial: float = 0.2
    maximum: float = 30.0

    def delay(self, failures: int, *, retry_after: float | None = None) -> float:
        return backoff_delay(failures, base=self.initial, cap=self.maximum, retry_after=retry_after)


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
