"""Fault injection for tests: answer the next requests that match with an error status (as
kube-apiserver words it), or slow them down. Thread-safe: a test arms a fault while the
controller under test is calling the server from its own threads."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from kubesim.errors import (
    APIError,
    conflict,
    expired,
    forbidden,
    not_found,
    status_for_code,
    unauthorized,
)
from kubesim.routing import RequestInfo

__all__ = ["Faults", "Matcher"]

Matcher = Callable[[RequestInfo], bool]


@dataclass(slots=True)
class _Failure:
    remaining: int
    match: Matcher | None
    make: Callable[[RequestInfo], APIError]


@dataclass(slots=True)
class _Delay:
    seconds: float
    remaining: int | None
    match: Matcher | None


def _error_for(
    code: int, retry_after: int | None, message: str | None
) -> Callable[[RequestInfo], APIError]:
    def make(info: RequestInfo) -> APIError:
        if message is None:
            if code == 401:
                return unauthorized()
            if code == 403:
                return forbidden(
                    info.user,
                    info.verb,
                    group=info.api_group,
                    resource=info.resource,
                    subresource=info.subresource,
                    namespace=info.namespace,
                    name=info.name,
                )
            if code == 404 and info.is_resource:
                return not_found(info.api_group, info.resource, info.name)
            if code == 409 and info.is_resource:
                return conflict(info.api_group, info.resource, info.name)
            if code == 410:
                return expired("too old resource version")
        return status_for_code(code, message, retry_after)

    return make


def _is_write(info: RequestInfo) -> bool:
    return info.verb in ("update", "patch")


class Faults:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[_Failure] = []
        self._delays: list[_Delay] = []

    def fail_next(
        self,
        n: int,
        code: int,
        *,
        match: Matcher | None = None,
        retry_after: int | None = None,
        message: str | None = None,
    ) -> None:
        """Answer the next `n` requests for which `match` is true (every request when None)
        with `code`: a Status with kube-apiserver's reason and, for 429/503, Retry-After."""
        with self._lock:
            self._failures.append(_Failure(n, match, _error_for(code, retry_after, message)))

    def conflict_next_write(self, n: int = 1, *, match: Matcher | None = None) -> None:
        """409 Conflict (the optimistic-lock message) on the next `n` updates or patches, as
        if another writer had got there first."""

        def writes(info: RequestInfo) -> bool:
            return _is_write(info) and (match is None or match(info))

        with self._lock:
            self._failures.append(_Failure(n, writes, _error_for(409, None, None)))

    def delay(self, seconds: float, *, n: int | None = None, match: Matcher | None = None) -> None:
        """Hold matching requests for `seconds` before serving them (the next `n`, or all
        until `reset`); `delay(0)` removes the delays."""
        with self._lock:
            if seconds <= 0:
                self._delays.clear()
            else:
                self._delays.append(_Delay(seconds, n, match))

    def reset(self) -> None:
        with self._lock:
            self._failures.clear()
            self._delays.clear()

    def pending(self) -> int:
        """How many armed failures have not fired yet."""
        with self._lock:
            return sum(failure.remaining for failure in self._failures)

    def take(self, info: RequestInfo) -> tuple[float, APIError | None]:
        """The delay and the failure (if any) for this request; consumes them."""
        with self._lock:
            wait = 0.0
            for delay in list(self._delays):
                if delay.match is None or delay.match(info):
                    wait += delay.seconds
                    if delay.remaining is not None:
                        delay.remaining -= 1
                        if delay.remaining <= 0:
                            self._delays.remove(delay)
            for failure in self._failures:
                if failure.match is None or failure.match(info):
                    failure.remaining -= 1
                    if failure.remaining <= 0:
                        self._failures.remove(failure)
                    return wait, failure.make(info)
            return wait, None
