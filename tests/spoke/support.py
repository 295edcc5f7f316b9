"""Readers and shortcuts the shell's tests share: build a report, wait for the worker, read a
status dict."""

from __future__ import annotations

from typing import Any

from controller.spoke.worker import Worker
from statemachines import Report
from statemachines.vocabulary import Reason

__all__ = ["MC", "UWL", "WAIT", "collector", "condition", "report", "settle", "true_type"]

MC = "metrics-collector"
UWL = "uwl-metrics-collector"
WAIT = 5.0  # seconds any single wait in these tests may take at most


def report(reason: Reason, collector: str | None = MC, **extra: Any) -> Report:
    return Report(reason, collector, extra.get("message", ""), extra.get("generation"))


def settle(worker: Worker) -> None:
    """Wait until the worker handled everything queued so far (and its timers due now)."""
    worker.tick().result(timeout=WAIT)


def condition(status: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(c for c in status.get("conditions", []) if c["type"] == type_)


def true_type(status: dict[str, Any]) -> str:
    """The standard condition type that is True; "" while the status has none."""
    standard = {"Available", "Degraded", "Progressing", "Disabled", "NotSupported"}
    found = (
        str(c["type"])
        for c in status.get("conditions", [])
        if c["type"] in standard and c["status"] == "True"
    )
    return next(found, "")


def collector(status: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in status.get("collectors", []) if c["name"] == name)
