"""Readers and shortcuts the shell's tests share: build a report, wait for the worker, read a
status dict."""

from __future__ import annotations

from typing import Any

from controller.kube.addons import AddonStore
from controller.kube.official import ApiClient, OfficialKube
from controller.options import RunOptions
from controller.spoke.controller import SpokeController
from controller.spoke.worker import Worker
from statemachines import Config, Report
from statemachines.vocabulary import Reason

__all__ = [
    "MC",
    "UWL",
    "WAIT",
    "collector",
    "condition",
    "ready",
    "report",
    "settle",
    "spoke_controller",
    "true_type",
]

MC = "metrics-collector"
UWL = "uwl-metrics-collector"
WAIT = 5.0  # seconds any single wait in these tests may take at most


def report(reason: Reason, collector: str | None = MC, **extra: Any) -> Report:
    return Report(
        reason, collector, extra.get("message", ""), extra.get("generation"), extra.get("version")
    )


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


def ready(worker: Worker) -> bool:
    """Worker running, the CR read and present, this replica leading."""
    return worker.alive and worker.present and worker.leading


def spoke_controller(
    options: RunOptions,
    *,
    store: AddonStore | None = None,
    api_client: ApiClient | None = None,
    config: Config | None = None,
    **kwargs: Any,
) -> SpokeController:
    """A `SpokeController` as `controller.app` builds one from `options`: on `store`, else on
    the real store over `api_client`."""
    if store is None:
        assert api_client is not None
        kube = OfficialKube(api_client, request_timeout=options.request_timeout)
        store = AddonStore(kube, options.ref)
    return SpokeController(
        store,
        config or options.config(),
        metrics_address=options.metrics_address,
        probe_address=options.probe_address,
        **kwargs,
    )
