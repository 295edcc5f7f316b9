"""Why the worker gave no verdict for a report (the report API answers each with a 503, naming
it), and why a report's verdict could not be stored."""

from __future__ import annotations

from statemachines.errors import AddonStatusError

__all__ = [
    "NotLeaderError",
    "QueueFullError",
    "StatusRejectedError",
    "SubmitTimeoutError",
    "WorkerError",
    "WorkerStoppedError",
]


class WorkerError(AddonStatusError):
    """A report could not be judged; the report API answers it with a 503."""


class NotLeaderError(WorkerError):
    """This replica does not lead: it neither writes the status nor judges reports."""


class WorkerStoppedError(WorkerError):
    """The worker is not running (not started yet, or shutting down)."""


class QueueFullError(WorkerError):
    """The worker's queue stayed full for the caller's whole timeout."""


class SubmitTimeoutError(WorkerError, TimeoutError):
    """No verdict within the caller's timeout: either the report was withdrawn before it was
    judged, or its effect is not on the addon CR yet (the worker keeps writing it). Either way
    the caller sends it again; the repeat is judged afresh."""


class StatusRejectedError(AddonStatusError):
    """The API server refused the status this report leads to (400, 413, 422, "request is too
    large"): nothing changed, the machines are as the CR holds them; sending the same report
    again cannot help."""
