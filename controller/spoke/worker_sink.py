"""The report API's sink on the worker: how a report reaches the machines from the report API
(`controller.report_api.sink` is the port, this the adapter), its errors in the report API's
words."""

from __future__ import annotations

from collections.abc import Callable

from controller.report_api.sink import SinkNotLeaderError, SinkRejectedError, SinkUnavailableError
from controller.spoke.errors import NotLeaderError, StatusRejectedError, WorkerError
from controller.spoke.worker import Worker
from statemachines import Report, Verdict

__all__ = ["WorkerSink"]


class WorkerSink:
    """The report API's sink (`controller.report_api.sink.ReportSink`) on the worker: its errors
    in the words of the report API. `on_verdict` hears every report answered with a verdict
    (the demo prints the ones sent by hand)."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self.on_verdict: list[Callable[[Report, Verdict], None]] = []

    def submit(self, report: Report, *, timeout: float) -> Verdict:
        verdict = self._submit(report, timeout=timeout)
        for listener in self.on_verdict:
            listener(report, verdict)
        return verdict

    def _submit(self, report: Report, *, timeout: float) -> Verdict:
        try:
            return self._worker.submit(report, timeout=timeout)
        except StatusRejectedError as error:
            raise SinkRejectedError(str(error)) from error
        except NotLeaderError as error:
            raise SinkNotLeaderError(str(error)) from error
        except TimeoutError as error:
            message = f"no verdict within {timeout:g}s; retry"
            raise SinkUnavailableError(message, timeout=True) from error
        except WorkerError as error:
            raise SinkUnavailableError(str(error)) from error
