"""Readers and shortcuts the shell's tests share: build a report, wait for the worker, read a
status dict."""

from __future__ import annotations

import threading
from typing import Any

from controller.kube.api import Kube
from controller.kube.connection import Connection
from controller.spoke.app import Replica
from controller.spoke.options import RunOptions
from controller.spoke.worker import Worker
from statemachines import Config, Report, VerdictKind
from statemachines.vocabulary import Reason
from tests.spoke.fakes import FakeAddonStore
from tests.support import MC, UWL, WAIT, collector, condition_of, true_type

__all__ = [
    "MC",
    "UWL",
    "WAIT",
    "boot",
    "collector",
    "condition_of",
    "hold_writes",
    "ready",
    "report",
    "settle",
    "spoke_replica",
    "submit_in_background",
    "true_type",
]


def report(reason: Reason, collector: str | None = MC, **extra: Any) -> Report:
    return Report(
        reason, collector, extra.get("message", ""), extra.get("generation"), extra.get("version")
    )


def settle(worker: Worker) -> None:
    """Wait until the worker handled everything queued so far (and its timers due now)."""
    worker.tick().result(timeout=WAIT)


def ready(worker: Worker) -> bool:
    """Worker running, the CR read and present, this replica leading."""
    return worker.alive and worker.present and worker.leading


def spoke_replica(
    options: RunOptions,
    *,
    kube: Kube | None = None,
    api_client: Connection | None = None,
    config: Config | None = None,
    **kwargs: Any,
) -> Replica:
    """A `Replica` of `options` on `kube` (the in-memory one), else over `api_client`."""
    return Replica(
        options, kube=kube, api_client=api_client, config=config or options.config(), **kwargs
    )


def boot(worker: Worker, *, collectors: tuple[str, ...] = (MC, UWL)) -> None:
    """The seed's boot sequence: deployed, then each of `collectors` forwards."""
    reports = [report(Reason.UPDATE_SUCCESSFUL, None, message="deployed")]
    reports += [report(Reason.FORWARD_SUCCESSFUL, c, message="sent") for c in collectors]
    for r in reports:
        assert worker.submit(r, timeout=WAIT).kind is VerdictKind.ACCEPTED
    settle(worker)


def hold_writes(store: FakeAddonStore) -> tuple[threading.Event, threading.Event]:
    """(entered, release): the next status PUTs block inside the store until `release`."""
    entered, release = threading.Event(), threading.Event()

    def hold(_: FakeAddonStore) -> None:
        entered.set()
        release.wait(WAIT)

    store.before_replace = hold
    return entered, release


def submit_in_background(worker: Worker, r: Any) -> tuple[threading.Thread, list[VerdictKind]]:
    answers: list[VerdictKind] = []
    caller = threading.Thread(
        target=lambda: answers.append(worker.submit(r, timeout=WAIT).kind), daemon=True
    )
    caller.start()
    return caller, answers
