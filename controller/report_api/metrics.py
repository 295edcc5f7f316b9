"""The report API's own metrics: requests by outcome, and how long their answers took."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["ReportMetrics"]


class ReportMetrics:
    """Report requests by outcome, and how long they took."""

    VERDICTS = ("accepted", "pending", "heartbeat", "refused")
    FAILURES = ("bad_request", "unauthorized", "forbidden", "unavailable", "error")

    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "addon_status_report_requests",
            "Report API requests, by outcome (a verdict, or why the request failed).",
            ["outcome"],
            registry=registry,
        )
        self.duration = Histogram(
            "addon_status_report_request_duration_seconds",
            "Time from a report request's arrival to its answer.",
            registry=registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
        )
        for outcome in self.VERDICTS + self.FAILURES:
            self.requests.labels(outcome)

    def observe(self, outcome: str, seconds: float) -> None:
        self.requests.labels(outcome).inc()
        self.duration.observe(seconds)
