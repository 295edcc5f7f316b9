"""What the report API hands a report to, and the answers it understands: the port a spoke
plugs its worker into (`controller.spoke.worker_sink.WorkerSink`), so that the report API knows no
worker."""

from __future__ import annotations

from typing import Protocol

from statemachines.errors import AddonStatusError
from statemachines.reports import Report, Verdict

__all__ = [
    "ReportSink",
    "SinkError",
    "SinkNotLeaderError",
    "SinkRejectedError",
    "SinkUnavailableError",
]


class SinkError(AddonStatusError):
    """The sink could not give a verdict."""


class SinkUnavailableError(SinkError):
    """Not now (stopped, queue full, no verdict in time): 503, send it again."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


class SinkNotLeaderError(SinkError):
    """Another replica leads: 503, and the connection closed so the retry may reach it."""


class SinkRejectedError(SinkError):
    """The API server refused the status this report leads to: 422, sending it again cannot
    help."""


class ReportSink(Protocol):
    def submit(self, report: Report, *, timeout: float) -> Verdict:
        """The verdict on `report`, given within `timeout` seconds. Raises SinkNotLeaderError,
        SinkUnavailableError or SinkRejectedError."""
        ...
