"""How health rules count in the aggregation: an overlay, like staleness.

A collector's machine state and reason underneath are never changed by a health rule; only what
the collector *contributes* to the precedence table is raised:

- a counted collector with a counted `Unhealthy` resource contributes at least
  `ResourceUnhealthy` (mapped to `Degraded`; `ForwardFailure` still outranks it);
- a counted collector with a counted `Unknown` resource contributes at least `UpdateSuccessful`
  (`Progressing`): it is never counted `Available` while the health of its objects is unknown.

"At least" is by the profile's precedence, so the overlay is `max(contribution, floor)` and the
aggregation stays a total order, independent of the order of collectors and resources. A
resource speaks for its `collector`, or for every counted collector when it names none.

The aggregator calls it between `collector_reason` and the `max` over the table:

    base = {c.name: collector_reason(c) for c in counted_collectors}
    kept = max(overlay(base, resources, counted, profile=profile).values(), key=precedence)
    message = addon_message(collectors_part, resources, counted)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from statemachines.health.counted import CountedHealth
from statemachines.health.resources import Resource
from statemachines.health.status import not_healthy
from statemachines.health.vocabulary import Health
from statemachines.vocabulary import Profile, Reason

__all__ = ["addon_message", "collector_health", "overlay"]

_FLOOR = {Health.UNHEALTHY: Reason.RESOURCE_UNHEALTHY, Health.UNKNOWN: Reason.UPDATE_SUCCESSFUL}
_WORST_FIRST = (Health.UNHEALTHY, Health.UNKNOWN, Health.HEALTHY)


def collector_health(
    collector: str, resources: Sequence[Resource], counted: Mapping[str, CountedHealth]
) -> Health:
    """The worst counted health of the resources that speak for `collector` (`Healthy` when
    none does); a resource with no entry yet counts as `Unknown`."""
    found = {
        counted[r.name].health if r.name in counted else Health.UNKNOWN
        for r in resources
        if r.speaks_for(collector)
    }
    return next((h for h in _WORST_FIRST if h in found), Health.HEALTHY)


def overlay(
    contributions: Mapping[str, Reason],
    resources: Sequence[Resource],
    counted: Mapping[str, CountedHealth],
    *,
    profile: Profile,
) -> dict[str, Reason]:
    """Each counted collector's contribution (`contributions`: name -> reason, the collectors
    that are neither `Disabled` nor `NotSupported`) raised to its resources' floor."""

    if not resources:  # nothing speaks for any collector: nothing is raised
        return dict(contributions)

    def rank(reason: Reason) -> int:
        return profile.spec(reason).precedence or 0

    raised = {}
    for name, reason in contributions.items():
        floor = _FLOOR.get(collector_health(name, resources, counted))
        raised[name] = reason if floor is None else max(reason, floor, key=rank)
    return raised


def addon_message(
    collectors: str, resources: Sequence[Resource], counted: Mapping[str, CountedHealth]
) -> str:
    """The addon's message: the collectors' part, then the resources not counted `Healthy`."""
    resources_part = not_healthy(resources, counted)
    return "; ".join(part for part in (collectors, resources_part) if part)
