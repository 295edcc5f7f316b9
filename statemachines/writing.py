"""Writing conditions (docs/spec.md §6): the conditions the CR carries for a state.

The standard types in their fixed order, then `Ready`, then one per configured collector, then
`ResourcesHealthy` when resources are configured (docs/spec.md §8), then any condition of someone
else's, untouched. Every one carries the CR's generation the state was computed for. The
history and the last known good generation (sections 9 and 10) follow the conditions here, so
they change in the same status write as the change they record.
"""

from __future__ import annotations

from datetime import datetime

from statemachines import health
from statemachines.aggregate import aggregate
from statemachines.conditions import Condition, ConditionStatus, kept_or_new, transition_time
from statemachines.config import Config
from statemachines.evolve import evolve
from statemachines.history import recorded
from statemachines.readiness import last_known_good, ready_condition
from statemachines.settings import format_duration
from statemachines.state import AddonState, CollectorState
from statemachines.vocabulary import READY, ConditionType, Reason

__all__ = ["collector_condition", "shown", "write_conditions"]

# The types the core writes besides the collectors' own; any other is someone else's.
_CORE_TYPES = frozenset({*ConditionType, READY, health.RESOURCES_HEALTHY})


def shown(c: CollectorState) -> tuple[object, ...]:
    """What the conditions read of a collector (its own condition, the aggregate's message and
    precedence, `Ready`'s generations): a change elsewhere — an open window, the staleness
    clock — cannot change them, and `apply` then skips `write_conditions`. A property test
    holds this list to `write_conditions`."""
    return (
        c.state, c.reason, c.message, c.changed_at, c.stale,
        c.observed_generation, c.desired_version, c.version,
    )  # fmt: skip


def collector_condition(
    c: CollectorState, config: Config, generation: int, old: Condition | None = None
) -> Condition:
    """The collector's own condition: its last accepted reason and message, Unknown while stale.
    Its transition time is the collector's own (docs/spec.md §1). `old`, the stored one, is kept if
    it says the same."""
    spec, name = config.spec(c.name), config.profile.name_of
    assert spec is not None and c.changed_at is not None
    type_, at = spec.condition_type, c.changed_at
    if c.stale:
        limit = format_duration(config.settings[c.name].staleness_limit)
        underneath = f"{c.state.value} ({name(c.reason or Reason.NO_REPORT_YET)})"
        message = f"no report for {limit} (staleAfter); last known state {underneath}"
        stale = name(Reason.REPORTS_STALE)
        return kept_or_new(old, type_, ConditionStatus.UNKNOWN, stale, message, at, generation)
    if c.reason is None:
        no_report = name(Reason.NO_REPORT_YET)
        no_report_yet = (ConditionStatus.TRUE, no_report, "no report yet")
        return kept_or_new(old, type_, *no_report_yet, at, generation)
    reported = (ConditionStatus.TRUE, name(c.reason), c.message)
    return kept_or_new(old, type_, *reported, at, generation)


def _type_of(c: CollectorState, config: Config) -> str:
    spec = config.spec(c.name)
    assert spec is not None  # every collector of a state is configured
    return spec.condition_type


def write_conditions(state: AddonState, config: Config, now: datetime) -> AddonState:
    """`state` with its conditions recomputed at `now` (the same object if nothing changed).

    A standard condition keeps its transition time unless its status flips; the False ones carry
    the kept reason too, so each says why, and a short message naming the True one rather than
    repeating its message (docs/spec.md §5).
    """
    previous = state.conditions
    by_type = {c.type: c for c in previous}
    collectors = [
        collector_condition(c, config, state.generation, by_type.get(_type_of(c, config)))
        for c in state.collectors
    ]
    result = aggregate(state, config, collectors)
    standard = []
    reason = config.profile.name_of(result.reason)
    for type_ in config.profile.standard_types:
        status = ConditionStatus.TRUE if type_ is result.type else ConditionStatus.FALSE
        since = transition_time(by_type.get(type_), status, now)
        old = by_type.get(type_)
        said = result.message if status is ConditionStatus.TRUE else f"the addon is {result.type}"
        written = (status, reason, said, since, state.generation)
        standard.append(kept_or_new(old, type_, *written))
    ready = ready_condition(state, standard, config, now)
    resources = health.resources_healthy(
        state.resources,
        state.health,
        previous=by_type.get(health.RESOURCES_HEALTHY),
        now=now,
        generation=state.generation,
    )
    ours = {c.condition_type for c in config.profile.collectors}
    foreign = tuple(c for c in previous if c.type not in _CORE_TYPES and c.type not in ours)
    conditions = (*standard, ready, *collectors, *([resources] if resources else []), *foreign)
    if conditions == previous:
        return state
    return evolve(
        state,
        conditions=conditions,
        history=recorded(state.history, previous, conditions, now, limit=config.history_limit),
        last_known_good=last_known_good(state.last_known_good, ready, state.generation, now),
    )
