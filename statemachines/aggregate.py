"""The aggregator: the collectors' states -> the addon's standard conditions, and the collector
conditions beside them.

The operator's overrides come first (`NotSupported`, then `Disabled`, of the primary collector);
then the precedence table over the collectors that count. The result does not depend on the
order of the collectors: precedence is a total order and the message is sorted by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from statemachines.conditions import Condition, find_condition, transition_time
from statemachines.config import Config
from statemachines.settings import format_duration
from statemachines.state import AddonState, CollectorState
from statemachines.vocabulary import ConditionType, Reason, State

__all__ = ["Aggregate", "aggregate", "collector_condition", "collector_reason", "write_conditions"]

_OUT_OF_TABLE = (State.DISABLED, State.NOT_SUPPORTED)


@dataclass(frozen=True, slots=True)
class Aggregate:
    type: ConditionType  # the standard type that is True
    reason: Reason
    message: str


def collector_reason(c: CollectorState) -> Reason:
    """What a collector contributes: staleness first, and `UpdateSuccessful` before any report."""
    if c.stale:
        return Reason.REPORTS_STALE
    return c.reason or Reason.UPDATE_SUCCESSFUL


def aggregate(state: AddonState, config: Config) -> Aggregate:
    own = [collector_condition(c, config, state.generation) for c in state.collectors]
    return _aggregate(state, config, own)


def _aggregate(state: AddonState, config: Config, own: list[Condition]) -> Aggregate:
    message = _message(state, config, own)
    primary = state.collector(config.primary.name)
    if primary.state is State.NOT_SUPPORTED:
        return Aggregate(ConditionType.NOT_SUPPORTED, Reason.NOT_SUPPORTED, message)
    if primary.state is State.DISABLED:
        return Aggregate(ConditionType.DISABLED, Reason.DISABLED_METRICS, message)
    counted = [collector_reason(c) for c in state.collectors if c.state not in _OUT_OF_TABLE]
    if not counted:  # only when the primary is not configured and every other one is switched off
        off = {c.state for c in state.collectors}
        kept = Reason.NOT_SUPPORTED if off == {State.NOT_SUPPORTED} else Reason.DISABLED_METRICS
    else:
        kept = max(counted, key=lambda r: config.profile.spec(r).precedence or 0)
    return Aggregate(config.profile.spec(kept).leads_to, kept, message)


def _message(state: AddonState, config: Config, own: list[Condition]) -> str:
    """`MetricsCollector: ForwardSuccessful (metrics sent); UwlMetricsCollector: ...`."""
    parts = []
    for c, condition in sorted(zip(state.collectors, own, strict=True), key=lambda p: p[0].name):
        spec = config.spec(c.name)
        name = spec.display_name if spec else c.name
        detail = f" ({condition.message})" if condition.message else ""
        parts.append(f"{name}: {condition.reason}{detail}")
    return "; ".join(parts)


def collector_condition(c: CollectorState, config: Config, generation: int) -> Condition:
    """The collector's own condition: its last accepted reason and message, Unknown while stale."""
    spec = config.spec(c.name)
    assert spec is not None and c.changed_at is not None
    if c.stale:
        limit = format_duration(config.settings[c.name].staleness_limit)
        underneath = f"{c.state.value} ({(c.reason or Reason.NO_REPORT_YET).value})"
        message = f"no report for {limit} (staleAfter); last known state {underneath}"
        return Condition(
            spec.condition_type, "Unknown", Reason.REPORTS_STALE, message, c.changed_at, generation
        )
    if c.reason is None:
        return Condition(
            spec.condition_type,
            "True",
            Reason.NO_REPORT_YET,
            "no report yet",
            c.changed_at,
            generation,
        )
    return Condition(spec.condition_type, "True", c.reason, c.message, c.changed_at, generation)


def write_conditions(state: AddonState, config: Config, now: datetime) -> AddonState:
    """`state` with its conditions recomputed: the standard types in their fixed order, then one
    per configured collector, then any condition of someone else's, untouched.

    Standard conditions keep their transition time unless their status flips (the False ones
    carry the kept reason too, so each says why); a collector condition's transition time is
    the collector's own (section 1 of the rules).
    """
    collectors = [collector_condition(c, config, state.generation) for c in state.collectors]
    result = _aggregate(state, config, collectors)
    previous = state.conditions
    standard = []
    for type_ in ConditionType:
        status = "True" if type_ is result.type else "False"
        since = transition_time(find_condition(previous, type_), status, now)
        standard.append(
            Condition(type_, status, result.reason, result.message, since, state.generation)
        )
    ours = {*ConditionType, *(c.condition_type for c in config.profile.collectors)}
    foreign = tuple(c for c in previous if c.type not in ours)
    conditions = (*standard, *collectors, *foreign)
    if conditions == previous:
        return state
    return AddonState(state.collectors, state.generation, conditions)
