"""The state of one addon: each collector's machine, its open window and versions, the
conditions, the history, the last known good generation and the related objects.

Immutable values; the entry point returns new ones (`stored.py` maps them to and from the CR).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from statemachines import health as health_rules
from statemachines.conditions import Condition
from statemachines.config import Config
from statemachines.evolve import evolve
from statemachines.health import CountedHealth, Resource
from statemachines.related import RelatedObject
from statemachines.vocabulary import Reason, State

__all__ = [
    "AddonState",
    "CollectorState",
    "HistoryEntry",
    "LastKnownGood",
    "Pending",
    "initial_state",
]


@dataclass(frozen=True, slots=True)
class Pending:
    """An open dampening window: `reason` has held since `since`; the last report said `message`."""

    reason: Reason
    since: datetime
    message: str


@dataclass(frozen=True, slots=True)
class CollectorState:
    name: str
    state: State = State.PROGRESSING
    reason: Reason | None = None  # None until the first report
    message: str = ""
    changed_at: datetime | None = None  # last change of state, reason or staleness
    observed_generation: int | None = None  # highest generation of a report it took
    pending: Pending | None = None
    stale: bool = False
    # docs/spec.md §9: the version its last UpdateSuccessful asked for, and the one known installed
    # (it becomes the desired one when the collector is next Available).
    desired_version: str | None = None
    version: str | None = None
    # When a report about it last arrived: the staleness clock. Not stored on the CR (a heartbeat
    # must write nothing), hence left out of equality; it restarts when the controller starts.
    heard_at: datetime | None = field(default=None, compare=False)

    def moved(self, state: State, reason: Reason, message: str, at: datetime) -> CollectorState:
        """The collector after a transition at `at`; a move closes any open dampening window,
        and a move to Available installs the version an update asked for."""
        installed = self.version
        if state is State.AVAILABLE and self.desired_version is not None:
            installed = self.desired_version
        return evolve(
            self,
            state=state,
            reason=reason,
            message=message,
            changed_at=at,
            pending=None,
            version=installed,
        )

    @property
    def updating(self) -> bool:
        """An update asked for a version that is not known installed yet."""
        return self.desired_version is not None and self.desired_version != self.version


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """A change of the addon's True standard type or of its reason (docs/spec.md §9)."""

    type: str
    reason: str
    message: str
    at: datetime  # whole seconds, as the conditions


@dataclass(frozen=True, slots=True)
class LastKnownGood:
    """The newest generation at which the addon was Ready, and when it became Ready at it."""

    generation: int
    since: datetime


@dataclass(frozen=True, slots=True)
class AddonState:
    collectors: tuple[CollectorState, ...]
    # The addon CR's metadata.generation as the shell read it: the conditions carry it, and a
    # report claiming a newer one is refused (FutureGeneration). Only the CR raises it.
    generation: int = 0
    conditions: tuple[Condition, ...] = ()
    # docs/spec.md §8: the configured resources (configuration order; what `status.resources[]`
    # lists) and each one's counted health by name. Health rules never touch `collectors`.
    resources: tuple[Resource, ...] = field(default=(), compare=False)
    health: Mapping[str, CountedHealth] = field(default_factory=dict, hash=False)
    history: tuple[HistoryEntry, ...] = ()  # newest first
    last_known_good: LastKnownGood | None = None
    related_objects: tuple[RelatedObject, ...] = ()  # as the configuration names them
    # `core.next_wakeup` remembered for one configuration: asked when the state is made and
    # again by the next report. Not a field of the value: every new state starts without it.
    wakeup: tuple[object, datetime | None] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    def collector(self, name: str) -> CollectorState:
        for c in self.collectors:
            if c.name == name:
                return c
        raise KeyError(name)

    def with_collector(self, new: CollectorState) -> AddonState:
        collectors = tuple(new if c.name == new.name else c for c in self.collectors)
        return evolve(self, collectors=collectors)


def initial_state(
    config: Config,
    now: datetime,
    generation: int = 0,
    *,
    health: Mapping[str, CountedHealth] | None = None,
) -> AddonState:
    """Every configured collector `Progressing` with no reason; the staleness clock starts now.
    Every configured resource has its `health` entry (the stored one) or, until its object is
    read, `Unknown`/`NotFound` from `now`."""
    return AddonState(
        tuple(CollectorState(c.name, changed_at=now, heard_at=now) for c in config.collectors),
        generation,
        resources=config.resources,
        health=health_rules.start(config.resources, health or {}, now),
        related_objects=config.related_objects,
    )
