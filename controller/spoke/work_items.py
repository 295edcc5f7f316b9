"""What the reconcile worker's queue carries: a report to judge, a watch event, a watched
object's new result, a tick of the timers, a new leadership verdict; and a verdict given that
waits for the CR to hold it."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass

from controller.kube.api import WatchEvent
from statemachines import Report, Verdict
from statemachines.health import Result

__all__ = ["TRIGGERS", "Item", "Judge", "Lead", "ObjectChanged", "Observe", "Tick", "Waiting"]


@dataclass(frozen=True, slots=True)
class Judge:
    report: Report
    answer: Future[Verdict]
    deadline: float  # monotonic: the caller stops waiting then


@dataclass(frozen=True, slots=True)
class Waiting:
    """A verdict given, answered once the CR holds it (see the module docstring)."""

    answer: Future[Verdict]
    verdict: Verdict
    deadline: float


@dataclass(frozen=True, slots=True)
class Observe:
    event: WatchEvent


@dataclass(frozen=True, slots=True)
class ObjectChanged:
    """What a watched object's rule says now (docs/spec.md §8), for the object at `version`."""

    resource: str
    result: Result
    version: str


@dataclass(frozen=True, slots=True)
class Tick:
    done: Future[None]


@dataclass(frozen=True, slots=True)
class Lead:
    leader: bool


Item = Judge | Observe | ObjectChanged | Tick | Lead
TRIGGERS: dict[type, str] = {
    Judge: "report",
    Observe: "watch",
    ObjectChanged: "object",
    Tick: "tick",
    Lead: "leader",
}
