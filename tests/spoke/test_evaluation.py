"""The health rules' evaluator (`controller.spoke.evaluation`): a resource's newest object
replaces the one waiting, so an object that changes faster than its rule is applied is evaluated
at its newest and never at every step in between; a bug while evaluating does not end it."""

from __future__ import annotations

import threading
from typing import Any

from controller.spoke.evaluation import Evaluations
from tests.support import WAIT, eventually


def test_the_newest_object_replaces_the_one_waiting() -> None:
    seen: list[tuple[str, str]] = []
    busy, release = threading.Event(), threading.Event()

    def deliver(resource: str, obj: dict[str, Any] | None, version: str) -> None:
        seen.append((resource, version))
        busy.set()
        release.wait(WAIT)

    evaluations = Evaluations(deliver)
    evaluations.start()
    try:
        evaluations.offer("a", {}, "1")
        assert busy.wait(WAIT)
        for version in ("2", "3", "4"):  # while "1" is being evaluated
            evaluations.offer("a", {}, version)
        evaluations.offer("b", None, "7")
        release.set()
        eventually(lambda: len(seen) == 3, "the newest of each")
    finally:
        evaluations.stop()
    # a resource offered again while evaluated waits behind the others (client-go's queue)
    assert seen == [("a", "1"), ("b", "7"), ("a", "4")]
    assert not evaluations.alive


def test_a_bug_while_evaluating_does_not_end_the_evaluator() -> None:
    seen: list[str] = []

    def deliver(resource: str, obj: dict[str, Any] | None, version: str) -> None:
        if version == "1":
            raise ValueError("a bug")
        seen.append(version)

    evaluations = Evaluations(deliver)
    evaluations.start()
    try:
        evaluations.offer("a", {}, "1")
        evaluations.offer("b", {}, "2")
        eventually(lambda: seen == ["2"], "the next evaluation")
    finally:
        evaluations.stop()
