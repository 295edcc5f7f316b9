"""The words of health rules (docs/spec.md §8): a resource's health, the reasons a rule
gives, and the condition types written for resources.

Kept apart from the reasons table of `statemachines.vocabulary`: these reasons are those of a
resource's `Healthy` condition and of `ResourcesHealthy`, never a collector's event. The one
reason a health rule adds to the aggregation, `ResourceUnhealthy`, is a row of that table.
"""

from __future__ import annotations

from enum import StrEnum

from statemachines.conditions import ConditionStatus

__all__ = [
    "HEALTHY",
    "HEALTHY_CONDITION_RULE",
    "RESOURCES_HEALTHY",
    "Health",
    "HealthReason",
]

HEALTHY = "Healthy"  # the type of the one condition of a `status.resources[]` entry
RESOURCES_HEALTHY = "ResourcesHealthy"  # the addon's condition over every resource
HEALTHY_CONDITION_RULE = "HealthyConditionRule"  # the reason of `ResourcesHealthy`


class Health(StrEnum):
    """What a rule says about an object; written as the `Healthy` condition's status."""

    HEALTHY = "Healthy"
    UNHEALTHY = "Unhealthy"
    UNKNOWN = "Unknown"

    @property
    def condition_status(self) -> ConditionStatus:
        return _STATUS[self]

    @classmethod
    def from_condition_status(cls, status: str) -> Health:
        """`True` -> Healthy, `False` -> Unhealthy, `Unknown` -> Unknown; ValueError else."""
        for health, text in _STATUS.items():
            if text == status:
                return health
        raise ValueError(f"{status!r} is not a condition status (True, False or Unknown)")


_STATUS = {
    Health.HEALTHY: ConditionStatus.TRUE,
    Health.UNHEALTHY: ConditionStatus.FALSE,
    Health.UNKNOWN: ConditionStatus.UNKNOWN,
}


class HealthReason(StrEnum):
    """The reasons of the rules; `singleConditionType: T` gives `<T>Condition` besides these."""

    ALWAYS_HEALTHY = "AlwaysHealthy"
    MATCHED_CONDITION = "MatchedCondition"
    MATCHED_FIELD = "MatchedField"
    NO_MATCHES_FULFILLED = "NoMatchesFulfilled"
    IN_PROGRESS = "InProgress"
    FAILED = "Failed"
    CURRENT = "Current"
    EVALUATION_ERROR = "EvaluationError"
    NOT_FOUND = "NotFound"
