"""The aggregator (docs/spec.md §5): the collectors' states -> the addon's standard type
that is True, the reason it keeps and the message naming every collector.

The operator's overrides come first (`NotSupported`, then `Disabled`, of the primary collector);
then the precedence table over the collectors that count, the contribution of each one that is
switched on raised by its resources' counted health (docs/spec.md §8: the overlay, like staleness,
never touches the machine underneath). The result does not depend on the order of the
collectors or resources: precedence is a total order and the message is sorted by name. The
table, and the standard type each reason leads to, are the profile's: in `acm` a switched-off
collector counts too, with `NotSupported` first and `Disabled` last in the table (docs/spec.md §11).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from statemachines import health
from statemachines.conditions import Condition
from statemachines.config import Config
from statemachines.size import ADDON_MESSAGE, cut
from statemachines.state import AddonState, CollectorState
from statemachines.vocabulary import ConditionType, Reason, State

__all__ = ["Aggregate", "aggregate", "collector_reason"]

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


def aggregate(state: AddonState, config: Config, own: Sequence[Condition]) -> Aggregate:
    """`own` are the collectors' conditions, in the order of `state.collectors`: the message
    quotes them."""
    message = _message(state, config, own)
    primary = state.collector(config.primary.name)
    profile = config.profile
    if primary.state is State.NOT_SUPPORTED:
        return Aggregate(profile.spec(Reason.NOT_SUPPORTED).leads_to, Reason.NOT_SUPPORTED, message)
    if primary.state is State.DISABLED:
        disabled = Reason.DISABLED_METRICS
        return Aggregate(profile.spec(disabled).leads_to, disabled, message)
    counts = [c for c in state.collectors if _counts(c, config)]
    switched_on = {c.name: collector_reason(c) for c in counts if c.state not in _OUT_OF_TABLE}
    raised = health.overlay(switched_on, state.resources, state.health, profile=profile)
    counted = [raised.get(c.name, collector_reason(c)) for c in counts]
    if not counted:  # only when the primary is not configured and every other one is switched off
        off = {c.state for c in state.collectors}
        kept = Reason.NOT_SUPPORTED if off == {State.NOT_SUPPORTED} else Reason.DISABLED_METRICS
    else:
        kept = max(counted, key=lambda r: config.profile.spec(r).precedence or 0)
    return Aggregate(config.profile.spec(kept).leads_to, kept, message)


def _counts(c: CollectorState, config: Config) -> bool:
    """A switched-off collector counts only where the profile ranks its reason."""
    if c.state not in _OUT_OF_TABLE:
        return True
    return c.reason is not None and config.profile.spec(c.reason).precedence is not None


def _message(state: AddonState, config: Config, own: Sequence[Condition]) -> str:
    """`MetricsCollector: ForwardSuccessful (metrics sent); UwlMetricsCollector: ...`, with
    `, updating 2.14.0 -> 2.15.0` after the reason while a collector's update is under way;
    then the resources that are not counted `Healthy`."""
    parts = []
    for c, condition in sorted(zip(state.collectors, own, strict=True), key=lambda p: p[0].name):
        spec = config.spec(c.name)
        name = spec.display_name if spec else c.name
        detail = f" ({condition.message})" if condition.message else ""
        parts.append(f"{name}: {condition.reason}{_update(c)}{detail}")
    addon = health.addon_message("; ".join(parts), state.resources, state.health)
    return cut(addon, ADDON_MESSAGE)  # docs/spec.md §6


def _update(c: CollectorState) -> str:
    """docs/spec.md §9: the versions of an update under way; `installing` when none is known yet."""
    if not c.updating:
        return ""
    if c.version is None:
        return f", installing {c.desired_version}"
    return f", updating {c.version} -> {c.desired_version}"
