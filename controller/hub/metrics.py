"""Prometheus metrics of hub replication: what an operator needs to tell "the hub copy is
current" from "the hub has been unreachable for an hour".

Each class registers its metrics on the registry it is given (tests give each their own
`CollectorRegistry`); the replicator only calls the small methods below. The error counter
starts at zero for every kind (`ErrorKind`), so the first failure of a kind shows in `increase()`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from controller.kube.api import ErrorKind

__all__ = ["LAG_BUCKETS", "ReplicationMetrics"]

LAG_BUCKETS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)
"""From a healthy write (tens of ms) to a hub that was down for an hour."""


class ReplicationMetrics:
    """Hub writes, skipped (already equal) syncs, errors by kind, lag and time since sync."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._monotonic = monotonic
        self._last_sync = monotonic()
        self.writes = Counter(
            "addon_status_hub_writes_total",
            "Writes of the addon status to the hub copy.",
            registry=registry,
        )
        self.unchanged = Counter(
            "addon_status_hub_unchanged_total",
            "Hub syncs that found the hub copy already equal and wrote nothing.",
            registry=registry,
        )
        self.errors = Counter(
            "addon_status_hub_errors_total",
            "Failed hub reads or writes, by kind (conflict, not_found, unauthorized, ...).",
            ["kind"],
            registry=registry,
        )
        for kind in ErrorKind:
            self.errors.labels(kind=kind.value)
        self.lag = Histogram(
            "addon_status_hub_replication_lag_seconds",
            "From the first spoke status change not yet on the hub to the hub holding it "
            "(or a newer one).",
            buckets=LAG_BUCKETS,
            registry=registry,
        )
        self.since_sync = Gauge(
            "addon_status_hub_seconds_since_last_sync",
            "Seconds since the hub copy was last confirmed equal to the spoke status "
            "(since start while it never was).",
            registry=registry,
        )
        self.since_sync.set_function(lambda: self._monotonic() - self._last_sync)

    def wrote(self) -> None:
        self.writes.inc()

    def found_unchanged(self) -> None:
        self.unchanged.inc()

    def failed(self, kind: ErrorKind) -> None:
        self.errors.labels(kind=kind).inc()

    def synced(self, *, lag: float | None) -> None:
        """The hub copy equals the newest spoke status; `lag` when that status was new."""
        self._last_sync = self._monotonic()
        if lag is not None:
            self.lag.observe(max(lag, 0.0))
