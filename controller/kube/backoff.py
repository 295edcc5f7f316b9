"""When to try again after a failed call to the API server: exponential backoff with jitter.

`backoff_delay` is the rule (full jitter, a server's `Retry-After` as a floor), `Backoff` the
policy of one kind of call (how long after the n-th failure). Who counts the failures is the
work queue's rate limiter (`controller.kube.ratelimit`) or the reflector's loop.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Final

__all__ = ["RETRY_AFTER_CEILING", "Backoff", "backoff_delay"]

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
