"""Watched objects through the reconcile worker (docs/spec.md §8 in the shell), on the in-memory
store: an object change is an item of the queue like a report, written only when the status
changes; a follower keeps following the objects, and a new leader replays them onto the
machines it rebuilt from the CR, so it does not fall behind its watches."""

from __future__ import annotations

from typing import Any

import pytest

from statemachines import Config, Settings
from statemachines.health import load_resources
from tests.spoke.conftest import WorkerFactory
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import MC, UWL, settle


@pytest.fixture
def config() -> Config:
    resources = load_resources(
        [
            {
                "name": "collector",
                "collector": MC,
                "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "mc"},
                "healthRule": {"singleConditionType": "Available"},
            }
        ],
        namespace="addons",
        collectors=[MC, UWL],
    )
    return Config.create(settings=Settings(), resources=resources)


def _deployment(available: str) -> dict[str, Any]:
    return {"status": {"conditions": [{"type": "Available", "status": available}]}}


def _health(store: FakeAddonStore) -> tuple[str, str]:
    [entry] = store.status["resources"]
    [condition] = entry["conditions"]
    return condition["status"], condition["reason"]


def test_an_object_change_is_written_only_when_the_status_changes(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    settle(worker)
    assert _health(store) == ("Unknown", "NotFound")
    worker.observe_object("collector", _deployment("True"), "10")
    settle(worker)
    assert _health(store) == ("True", "AvailableCondition")
    writes = len(store.puts)
    worker.observe_object("collector", _deployment("True"), "11")
    settle(worker)
    assert len(store.puts) == writes
    assert worker.objects_seen == {"collector": "11"}
    worker.observe_object("collector", None, "12")
    settle(worker)
    assert _health(store) == ("Unknown", "NotFound")
    assert len(store.puts) == writes + 1


def test_a_new_leader_replays_the_objects_its_watches_delivered(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    old = make_worker()
    follower = make_worker(leader=False)
    settle(old)
    # Only the follower's watch has delivered the object so far; it writes nothing.
    follower.observe_object("collector", _deployment("True"), "10")
    settle(follower)
    assert _health(store) == ("Unknown", "NotFound")
    old.set_leader(False)
    follower.set_leader(True)
    settle(follower)
    assert _health(store) == ("True", "AvailableCondition")
