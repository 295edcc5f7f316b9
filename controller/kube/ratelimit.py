"""How long a work queue holds a key back before it is tried again, as client-go's
`workqueue` rate limiters decide it: per key, exponential in that key's failures (with full
jitter, `controller.kube.backoff`) until it is forgotten; overall, a token bucket, so that a
thousand keys failing at once are retried at a steady rate rather than in one burst; the
larger of the two (`MaxOf`). A server's `Retry-After` is a floor, never shortened.

Time is the injected `clock` (monotonic seconds).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable
from typing import Generic, Protocol, TypeVar

from controller.kube.backoff import RETRY_AFTER_CEILING, Backoff

__all__ = ["Bucket", "ItemBackoff", "MaxOf", "RateLimiter", "default_rate_limiter"]

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class RateLimiter(Protocol[K_contra]):
    """client-go's `TypedRateLimiter`: `when` counts a retry of `key` and says how long to
    wait, `forget` ends the key's run of failures, `retries` is how many it has had."""

    def when(self, key: K_contra, *, retry_after: float | None = None) -> float: ...

    def forget(self, key: K_contra) -> None: ...

    def retries(self, key: K_contra) -> int: ...


class ItemBackoff(Generic[K]):
    """Each key's own exponential backoff: one failing key never delays another."""

    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._lock = threading.Lock()
        self._failures: dict[K, int] = {}

    def when(self, key: K, *, retry_after: float | None = None) -> float:
        with self._lock:
            failures = self._failures[key] = self._failures.get(key, 0) + 1
        return self._backoff.delay(failures, retry_after=retry_after)

    def forget(self, key: K) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def retries(self, key: K) -> int:
        with self._lock:
            return self._failures.get(key, 0)


class Bucket:
    """A token bucket over every key (client-go's `BucketRateLimiter`: `rate` retries a second,
    `burst` at once): each retry reserves the next token, and waits until it is there."""

    def __init__(
        self, rate: float, burst: int, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if rate <= 0 or burst < 1:
            raise ValueError("a bucket needs a positive rate and a burst of at least 1")
        self._rate, self._burst, self._clock = rate, float(burst), clock
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._at = clock()

    def when(self, key: object, *, retry_after: float | None = None) -> float:
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._at) * self._rate)
            self._at = now
            self._tokens -= 1.0  # reserved: a negative balance is the queue of reservations
            wait = max(-self._tokens / self._rate, 0.0)
        return max(wait, min(max(retry_after or 0.0, 0.0), RETRY_AFTER_CEILING))

    def forget(self, key: object) -> None:
        """The bucket is shared: one key's success returns no token."""

    def retries(self, key: object) -> int:
        return 0


class MaxOf(Generic[K]):
    """The longest wait any of `limiters` asks for; every one of them counts the retry."""

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        self._limiters = limiters

    def when(self, key: K, *, retry_after: float | None = None) -> float:
        return max(limiter.when(key, retry_after=retry_after) for limiter in self._limiters)

    def forget(self, key: K) -> None:
        for limiter in self._limiters:
            limiter.forget(key)

    def retries(self, key: K) -> int:
        return max(limiter.retries(key) for limiter in self._limiters)


def default_rate_limiter(
    backoff: Backoff | None = None, *, clock: Callable[[], float] = time.monotonic
) -> MaxOf[K]:
    """client-go's default controller rate limiter: per key from 5 ms doubling up to 1,000 s,
    overall 10 retries a second with bursts of 100 (the project's jitter on the per-key part)."""
    per_key: ItemBackoff[K] = ItemBackoff(backoff or Backoff(initial=0.005, maximum=1000.0))
    return MaxOf(per_key, Bucket(10.0, 100, clock=clock))
