"""The one status-update loop (library-go `v1helpers.UpdateStatus`): read, apply the pure
mutator, skip the write when nothing changes, write with the read resourceVersion, start over
from a fresh read on 409 a bounded number of times; a `first` object saves the first read."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from controller.kube.api import ADDON, ConflictError, UnavailableError
from controller.kube.fake import FakeKube
from controller.kube.update import update_status

NAMESPACE, NAME = "ns", "addon"


def stored(status: dict[str, Any] | None = None) -> FakeKube:
    kube = FakeKube()
    kube.put(
        ADDON,
        {
            "apiVersion": ADDON.api_version,
            "kind": ADDON.kind,
            "metadata": {"name": NAME, "namespace": NAMESPACE},
            **({"status": status} if status is not None else {}),
        },
    )
    return kube


def run(kube: FakeKube, mutate: Any, **options: Any) -> Any:
    return update_status(
        lambda: kube.get(ADDON, NAMESPACE, NAME),
        mutate,
        lambda body: kube.replace_status(ADDON, NAMESPACE, NAME, body),
        what="the test's CR",
        **options,
    )


def ready(current: Mapping[str, Any]) -> dict[str, Any]:
    return {**current, "ready": True}


def test_an_unchanged_status_is_not_written() -> None:
    kube = stored({"ready": True})
    updated = run(kube, ready)
    assert not updated.written and kube.ops("replace_status") == []


def test_a_mutator_saying_none_skips_the_write() -> None:
    kube = stored()
    assert not run(kube, lambda current: None).written
    assert kube.ops("replace_status") == []


def test_a_change_is_written_with_the_read_resource_version() -> None:
    kube = stored({"other": 1})
    updated = run(kube, ready)
    assert updated.written and updated.obj["status"] == {"other": 1, "ready": True}


def test_a_conflict_starts_over_from_a_fresh_read() -> None:
    kube = stored()
    kube.before["replace_status"] = lambda: (
        kube.before.clear()
        or kube.edit(ADDON, NAMESPACE, NAME, lambda obj: obj.update(status={"theirs": 1}))
    )
    retries: list[int] = []
    updated = run(kube, ready, on_conflict=lambda attempt, error: retries.append(attempt))
    assert retries == [1] and kube.conflicts == 1
    assert updated.obj["status"] == {"theirs": 1, "ready": True}  # theirs kept


def test_a_first_object_saves_the_first_read_only() -> None:
    kube = stored()
    stale = kube.get(ADDON, NAMESPACE, NAME)
    kube.edit(ADDON, NAMESPACE, NAME, lambda obj: obj.update(status={"theirs": 1}))
    reads = len(kube.ops("get"))
    updated = run(kube, ready, first=stale)
    assert len(kube.ops("get")) == reads + 1  # the retry after the 409 read afresh
    assert updated.obj["status"] == {"theirs": 1, "ready": True}


def test_conflicts_on_every_attempt_give_up_naming_the_object() -> None:
    kube = stored()
    kube.before["replace_status"] = lambda: kube.edit(ADDON, NAMESPACE, NAME, lambda obj: None)
    retries: list[int] = []
    with pytest.raises(ConflictError, match="the test's CR: still conflicting after 3 attempts"):
        run(kube, ready, attempts=3, on_conflict=lambda attempt, error: retries.append(attempt))
    assert retries == [1, 2] and kube.conflicts == 3


def test_any_other_failure_is_raised_at_once() -> None:
    kube = stored()
    kube.fail_next("replace_status", 503)
    with pytest.raises(UnavailableError):
        run(kube, ready)
    assert len(kube.ops("replace_status")) == 1
