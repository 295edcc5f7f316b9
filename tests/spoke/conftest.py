"""Shared pieces of the shell's unit tests: the fake store, the fake clock, a worker factory
that stops every worker it started, and small readers of a status dict."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.ops.role import Role
from controller.spoke.metrics import ControllerMetrics
from controller.spoke.worker import Worker
from statemachines import Config, Settings
from tests.clock import FakeClock
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import WAIT

WorkerFactory = Callable[..., Worker]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store() -> FakeAddonStore:
    return FakeAddonStore()


@pytest.fixture
def config() -> Config:
    return Config.create(
        settings=Settings.model_validate({"degradeAfter": "10m", "reportInterval": "5m"})
    )


@pytest.fixture
def make_worker(store: FakeAddonStore, clock: FakeClock, config: Config) -> Iterator[WorkerFactory]:
    started: list[Worker] = []

    def make(**kwargs: Any) -> Worker:
        kwargs.setdefault("metrics", ControllerMetrics(CollectorRegistry()))
        kwargs.setdefault("clock", clock)
        leader, lease_held = kwargs.pop("leader", True), kwargs.pop("lease_held", None)
        kwargs.setdefault("role", Role(elected=leader, lease_held=lease_held))
        worker = Worker(kwargs.pop("store", store), kwargs.pop("config", config), **kwargs)
        worker.start()
        started.append(worker)
        return worker

    yield make
    for worker in started:
        worker.stop(WAIT)
