"""`Ready` and the last known good generation (docs/spec.md §10).

`Available` says the addon works; `Ready` says it works *as the CR now asks*: every counted
collector (neither Disabled nor NotSupported) has reported at the CR's current generation. A
collector whose reports never carried an `observedGeneration` counts as current: nothing says it
lags. `Ready=False` says why: the True type and its reason, then the resources not counted
`Healthy` (a watched object that is gone is named there, as `NotFound`).
`status.lastKnownGood` remembers the newest generation the addon was Ready at, and since when;
it never goes back, so after a bad spec change it still names the generation to return to.
"""

from __future__ import annotations

from datetime import datetime

from statemachines import health
from statemachines.conditions import (
    Condition,
    ConditionStatus,
    find_condition,
    kept_or_new,
    standard_true,
    transition_time,
)
from statemachines.config import Config
from statemachines.size import ADDON_MESSAGE, cut
from statemachines.state import AddonState, CollectorState, LastKnownGood
from statemachines.vocabulary import READY, ConditionType, ReadyReason, State

__all__ = ["last_known_good", "ready_condition"]

_NOT_COUNTED = (State.DISABLED, State.NOT_SUPPORTED)


def _lagging(state: AddonState) -> list[CollectorState]:
    return [
        c
        for c in state.collectors
        if c.state not in _NOT_COUNTED
        and c.observed_generation is not None
        and c.observed_generation < state.generation
    ]


def ready_condition(
    state: AddonState, standard: list[Condition], config: Config, now: datetime
) -> Condition:
    """`Ready` for `state`, given the standard conditions just computed for it."""
    available = find_condition(tuple(standard), ConditionType.AVAILABLE)
    generation = state.generation
    if available is None or available.status is not ConditionStatus.TRUE:
        true = standard_true(standard)
        assert true is not None  # exactly one standard type is True
        reason, status = ReadyReason.NOT_AVAILABLE, ConditionStatus.FALSE
        message = f"the addon is {true.type}, not Available ({true.reason})"
        if held := health.not_healthy(state.resources, state.health):
            message += f"; not healthy: {held}"  # a gone object says so here too (§8)
    elif lagging := _lagging(state):
        reason, status = ReadyReason.OUTDATED_GENERATION, ConditionStatus.FALSE
        names = ", ".join(
            f"{_display(c, config)} at generation {c.observed_generation}" for c in lagging
        )
        message = f"Available, but not every collector reported at generation {generation}: {names}"
    else:
        reason, status = ReadyReason.CURRENT, ConditionStatus.TRUE
        message = f"Available at generation {generation}"
    old = find_condition(state.conditions, READY)
    since = transition_time(old, status, now)
    return kept_or_new(old, READY, status, reason, cut(message, ADDON_MESSAGE), since, generation)


def last_known_good(
    previous: LastKnownGood | None, ready: Condition, generation: int, now: datetime
) -> LastKnownGood | None:
    """The newest generation the addon was Ready at: moves only forward, keeps its `since`."""
    if ready.status is not ConditionStatus.TRUE:
        return previous
    if previous is not None and previous.generation >= generation:
        return previous
    return LastKnownGood(generation, now.replace(microsecond=0))


def _display(c: CollectorState, config: Config) -> str:
    spec = config.spec(c.name)
    return spec.display_name if spec else c.name
