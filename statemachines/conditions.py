"""Kubernetes conditions: the value, how its times are written, and the rules every condition
keeps: `lastTransitionTime` moves only when the status changes (`meta.SetStatusCondition`),
reasons match the Kubernetes pattern, messages are cut (never rejected) at the API's limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from statemachines.vocabulary import REASON_PATTERN

__all__ = [
    "MAX_MESSAGE",
    "Condition",
    "cut_message",
    "find_condition",
    "format_precise",
    "format_time",
    "parse_time",
    "transition_time",
]

MAX_MESSAGE = 32768
_CUT_MARK = " [...]"


def cut_message(message: str) -> str:
    """Messages longer than the API allows are cut, with a visible mark, never rejected."""
    if len(message) <= MAX_MESSAGE:
        return message
    return message[: MAX_MESSAGE - len(_CUT_MARK)] + _CUT_MARK


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
    status: str  # "True" | "False" | "Unknown"
    reason: str
    message: str
    last_transition_time: datetime
    observed_generation: int

    def __post_init__(self) -> None:
        if not _valid_reason(self.reason):
            raise ValueError(f"condition {self.type}: reason {self.reason!r} is not a valid reason")
        if self.last_transition_time.microsecond:
            object.__setattr__(
                self, "last_transition_time", self.last_transition_time.replace(microsecond=0)
            )
        if len(self.message) > MAX_MESSAGE:
            object.__setattr__(self, "message", cut_message(self.message))

    def to_api(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "status": self.status,
            "reason": self.reason,
            "message": self.message,
            "lastTransitionTime": format_time(self.last_transition_time),
            "observedGeneration": self.observed_generation,
        }

    @classmethod
    def from_api(cls, raw: dict[str, Any]) -> Condition:
        return cls(
            type=str(raw["type"]),
            status=str(raw["status"]),
            reason=str(raw["reason"]),
            message=str(raw.get("message", "")),
            last_transition_time=parse_time(str(raw["lastTransitionTime"])),
            observed_generation=int(raw.get("observedGeneration", 0)),
        )


def find_condition(conditions: tuple[Condition, ...], type_: str) -> Condition | None:
    return next((c for c in conditions if c.type == type_), None)


def transition_time(old: Condition | None, status: str, now: datetime) -> datetime:
    """The `meta.SetStatusCondition` rule: the time moves only when the status changes."""
    return old.last_transition_time if old is not None and old.status == status else now
