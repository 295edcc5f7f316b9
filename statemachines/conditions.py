"""Kubernetes conditions: the value, how its times are written, and the rules every condition
keeps: `lastTransitionTime` moves only when the status changes (`meta.SetStatusCondition`),
reasons match the Kubernetes pattern, messages are cut (never rejected) at the API's limit (the
tighter limits of docs/spec.md §6 are `statemachines.size`'s, applied where a text is made).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache
from typing import Any

from statemachines.names import REASON_PATTERN, ConditionType
from statemachines.size import cut

__all__ = [
    "MAX_MESSAGE",
    "STANDARD_TYPES",
    "Condition",
    "ConditionStatus",
    "find_condition",
    "format_precise",
    "format_time",
    "kept_or_new",
    "parse_time",
    "standard_true",
    "standard_true_in",
    "transition_time",
]

STANDARD_TYPES = tuple(t.value for t in ConditionType)  # of either profile


class ConditionStatus(StrEnum):
    """A condition's `status`, as Kubernetes spells it."""

    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


MAX_MESSAGE = 32768  # what `metav1.Condition` allows


def format_time(moment: datetime) -> str:
    """RFC 3339, UTC, whole seconds: what `metav1.Time` serialises to."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_precise(moment: datetime) -> str:
    """RFC 3339, UTC, microseconds kept: the times of our own status fields (a window's start),
    so that a restored window, and the deadline a verdict names, are exact."""
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment.astimezone(UTC)


@lru_cache(maxsize=256)
def _valid_reason(reason: str) -> bool:
    return REASON_PATTERN.match(reason) is not None


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: ConditionStatus
    reason: str
    message: str
    last_transition_time: datetime
    observed_generation: int

    def __post_init__(self) -> None:
        if self.status.__class__ is not ConditionStatus:
            object.__setattr__(self, "status", ConditionStatus(self.status))  # ValueError if none
        if not _valid_reason(self.reason):
            raise ValueError(f"condition {self.type}: reason {self.reason!r} is not a valid reason")
        if self.last_transition_time.microsecond:
            object.__setattr__(
                self, "last_transition_time", self.last_transition_time.replace(microsecond=0)
            )
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", cut(self.message, MAX_MESSAGE))

    def to_api(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status.value,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": format_time(self.last_transition_time),
            "observedGeneration": self.observed_generation,
        }

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> Condition:
        return cls(
            type=str(raw["type"]),
            status=ConditionStatus(raw["status"]),
            reason=str(raw["reason"]),
            message=str(raw.get("message", "")),
            last_transition_time=parse_time(str(raw["lastTransitionTime"])),
            observed_generation=int(raw.get("observedGeneration", 0)),
        )


def kept_or_new(  # noqa: PLR0917 (a condition's fields, in their order)
    old: Condition | None,
    type_: str,
    status: ConditionStatus,
    reason: str,
    message: str,
    since: datetime,
    generation: int,
) -> Condition:
    """`old` when it already says exactly this, else a new condition: most writes change one
    or two of the eight conditions, and building a value costs more than comparing one."""
    if (
        old is not None
        and old.status is status
        and old.reason == reason
        and old.message == message
        and old.last_transition_time == since
        and old.observed_generation == generation
    ):
        return old
    return Condition(type_, status, reason, message, since, generation)


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def standard_true(conditions: Iterable[Condition]) -> Condition | None:
    """The standard condition that is True (the core writes exactly one), if there is one."""
    return next(
        (c for c in conditions if c.type in STANDARD_TYPES and c.status is ConditionStatus.TRUE),
        None,
    )


def standard_true_in(conditions: object) -> list[Mapping[str, Any]]:
    """The standard conditions that are True in a status's `conditions` as an API server
    returns them (written by anyone: possibly none, several, or malformed entries, which are
    skipped), in the standard types' order."""
    found = {
        c.get("type"): c
        for c in (conditions if isinstance(conditions, list) else [])
        if isinstance(c, Mapping) and c.get("status") == ConditionStatus.TRUE
    }
    return [found[t] for t in STANDARD_TYPES if t in found]


def transition_time(old: Condition | None, status: str, now: datetime) -> datetime:
    """The `meta.SetStatusCondition` rule: the time moves only when the status changes."""
    return old.last_transition_time if old is not None and old.status == status else now
