"""Reports in, verdicts out: the values that cross the report API, and their validation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from statemachines.conditions import format_precise
from statemachines.config import Config
from statemachines.errors import ReportError
from statemachines.readback import GENERATION_LIMIT  # observedGeneration is an int64
from statemachines.size import REPORT_MESSAGE, cut
from statemachines.vocabulary import Actor, Profile, Reason, Rule, State

__all__ = [
    "GENERATION_LIMIT",
    "VERSION_LIMIT",
    "VERSION_PATTERN",
    "Report",
    "Verdict",
    "VerdictKind",
    "parse_report",
]

_GENERATION_RANGE = "must be an integer 0 <= n < 2^63"

VERSION_LIMIT = 64  # characters of a reported version (docs/spec.md §9)

_FIELDS = ("collector", "reason", "message", "observedGeneration", "version")
# C0 and C1 controls and DEL, except tab and newline.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# What a version may not hold (`VERSION_PATTERN` says it for the OpenAPI document).
_CONTROL_OR_BREAK = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
VERSION_PATTERN = "^[^\\u0000-\\u001f\\u007f-\\u009f\\u2028\\u2029]+$"


@dataclass(frozen=True, slots=True)
class Report:
    """A reason reported about one collector, or (collector None) by the operator about all."""

    reason: Reason
    collector: str | None = None
    message: str | None = None  # None: the report has no message (a heartbeat keeps the old one)
    observed_generation: int | None = None
    version: str | None = None  # with UpdateSuccessful only: the version the update installs

    def __post_init__(self) -> None:
        if self.message is not None and len(self.message) > REPORT_MESSAGE:
            object.__setattr__(self, "message", cut(self.message, REPORT_MESSAGE))
        generation = self.observed_generation
        if generation is not None and not 0 <= generation < GENERATION_LIMIT:
            raise ReportError("observedGeneration", _GENERATION_RANGE)
        if self.version is not None:
            _check_version(self.version, self.reason)


def _check_version(version: object, reason: Reason) -> None:
    """docs/spec.md §9: a version comes with UpdateSuccessful, as 1 to 64 characters."""
    if reason is not Reason.UPDATE_SUCCESSFUL:
        raise ReportError(
            "version", f"only an {Reason.UPDATE_SUCCESSFUL.value} report carries a version"
        )
    if not isinstance(version, str) or not 0 < len(version) <= VERSION_LIMIT:
        raise ReportError("version", f"must be a string of 1 to {VERSION_LIMIT} characters")
    if _CONTROL_OR_BREAK.search(version):  # an escape sequence, a newline: a forged table row
        raise ReportError("version", "must not hold control characters or line breaks")


class VerdictKind(StrEnum):
    ACCEPTED = "accepted"  # the collector moved (state or reason changed)
    PENDING = "pending"  # a dampening window is open; the move happens at its deadline
    HEARTBEAT = "heartbeat"  # the current reason again: nothing moves
    REFUSED = "refused"  # a rule (`Rule`) refuses it: nothing changes


# Which verdict a report to every collector gets when no collector refuses it.
STRENGTH = (VerdictKind.HEARTBEAT, VerdictKind.PENDING, VerdictKind.ACCEPTED)


@dataclass(frozen=True, slots=True)
class Verdict:
    kind: VerdictKind
    collector: str | None
    state: State  # the collector's state after the report
    reason: Reason | None  # the collector's reason after the report
    detail: str
    rule: Rule | None = None  # the rule that refused it
    deadline: datetime | None = None  # when a pending window ends, exactly

    def to_api(self, profile: Profile) -> dict[str, Any]:
        """The report API's answer, reasons spelled as `profile` writes them on the CR."""
        out: dict[str, Any] = {
            "verdict": self.kind.value,
            "collector": self.collector,
            "state": self.state.value,
            "reason": profile.name_of(self.reason) if self.reason else None,
            "detail": profile.spelled(self.detail),
        }
        if self.rule:
            out["rule"] = self.rule.value
        if self.deadline:
            # The instant the CR stores (pendingSince + window), microseconds kept.
            out["deadline"] = format_precise(self.deadline)
        return out


def parse_report(raw: object, config: Config) -> Report:
    """A well-formed report from decoded JSON or YAML, or ReportError naming the field."""
    if not isinstance(raw, Mapping):
        raise ReportError("", f"a report is a JSON object, not {type(raw).__name__}")
    for key, value in raw.items():
        name = str(key).encode("utf-8", "backslashreplace").decode()  # printable as a field
        _check_unicode(name, key)
        _check_unicode(name, value)
        if key not in _FIELDS:
            raise ReportError(str(key), f"unknown field; a report has {', '.join(_FIELDS)}")
    reason_text = raw.get("reason")
    if not isinstance(reason_text, str):
        raise ReportError("reason", "required, a string")
    reason = config.profile.parse_reason(reason_text)
    if reason is None:
        known = ", ".join(config.profile.reportable())
        raise ReportError("reason", f"unknown reason {reason_text!r}; known: {known}")
    collector = raw.get("collector")
    if collector is not None:
        if not isinstance(collector, str):
            raise ReportError("collector", "must be a string")
        if config.spec(collector) is None:
            names = ", ".join(c.name for c in config.collectors)
            raise ReportError("collector", f"{collector!r} is not configured; configured: {names}")
    elif config.profile.spec(reason).reported_by is Actor.METRICS_COLLECTOR:
        raise ReportError(
            "collector", f"required: {reason.value} is reported by a collector about itself"
        )
    message = raw.get("message")
    if "message" in raw and not isinstance(message, str):
        raise ReportError("message", "must be a string")
    generation = raw.get("observedGeneration")
    if generation is not None and (not isinstance(generation, int) or isinstance(generation, bool)):
        raise ReportError("observedGeneration", _GENERATION_RANGE)
    version = raw.get("version")
    if version is not None:
        _check_version(version, reason)
    return Report(reason, collector, _cleaned(message), generation, version)


def _cleaned(message: str | None) -> str | None:
    """Control characters other than tab and newline become U+FFFD; cut to 1,024 characters
    (docs/spec.md §6)."""
    if message is None:
        return None
    # isprintable() is false for every control character (and for tab, newline and some
    # spaces): a fast path, the regex alone costs several microseconds per message.
    cleaned = message if message.isprintable() else _CONTROL.sub("\ufffd", message)
    return cut(cleaned, REPORT_MESSAGE)


def _check_unicode(field: str, value: object) -> None:
    """A string the CR could not store as sent: a lone UTF-16 surrogate (JSON `"\\ud800"`) is
    no Unicode scalar value; the API server would store U+FFFD in its place, so that the status
    would silently differ from what the reporter said."""
    if not isinstance(value, str):
        return
    try:
        value.encode("utf-8")  # fails on surrogates alone, at C speed
    except UnicodeEncodeError as error:
        raise ReportError(
            field,
            f"not valid Unicode: a lone surrogate U+{ord(value[error.start]):04X} at character "
            f"{error.start}",
        ) from None
