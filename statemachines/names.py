"""The names of the vocabulary: condition types, reasons, rules and actors, as enums.

Apart from the table that ties them together (`statemachines.vocabulary`, validated with
pydantic), so that what only reads or writes these names (the fleet view, conditions) loads
no pydantic. Every other module refers to these names; none spells one as a string literal.
"""

from __future__ import annotations

import re
from enum import StrEnum

__all__ = [
    "READY",
    "REASON_PATTERN",
    "Actor",
    "ConditionType",
    "ReadyReason",
    "Reason",
    "Rule",
    "State",
]

REASON_PATTERN = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")


class ConditionType(StrEnum):
    """The standard condition types on the addon CR; exactly one of them is True."""

    AVAILABLE = "Available"
    DEGRADED = "Degraded"
    PROGRESSING = "Progressing"
    DISABLED = "Disabled"
    NOT_SUPPORTED = "NotSupported"


# A collector's machine has the standard types as its states.
State = ConditionType

# Not a standard type (docs/spec.md §10): Available at the CR's current generation.
READY = "Ready"


class ReadyReason(StrEnum):
    """The reasons of the `Ready` condition."""

    CURRENT = "AvailableAtCurrentGeneration"  # True: every counted collector is at it
    NOT_AVAILABLE = "NotAvailable"  # the addon is not Available
    OUTDATED_GENERATION = "OutdatedGeneration"  # Available, but a collector lags


class Reason(StrEnum):
    FORWARD_FAILURE = "ForwardFailure"
    FORWARD_SUCCESSFUL = "ForwardSuccessful"
    UPDATE_FAILURE = "UpdateFailure"
    UPDATE_SUCCESSFUL = "UpdateSuccessful"
    DISABLED_METRICS = "DisabledMetrics"
    NOT_SUPPORTED = "NotSupported"
    # Ours, not reportable: a collector nobody has heard of for `staleAfter`.
    REPORTS_STALE = "ReportsStale"
    # Ours, not reportable: a health rule counts an object of the collector's Unhealthy.
    RESOURCE_UNHEALTHY = "ResourceUnhealthy"
    # Sentinel for the condition of a collector that has not been reported on yet.
    NO_REPORT_YET = "NoReportYet"


class Rule(StrEnum):
    """The rules that refuse a report; a `refused` verdict names exactly one of them."""

    # The machine has no row from the collector's state on the reported reason (docs/spec.md §2).
    NO_TRANSITION = "NoTransition"
    # Only Degraded because of ForwardFailure may move this way; UpdateFailure blocks it.
    REQUIRES_FORWARD_FAILURE = "RequiresForwardFailure"
    # Older than a generation the collector already took (docs/spec.md §6).
    OUTDATED_GENERATION = "OutdatedGeneration"
    # Newer than the addon CR's metadata.generation: a reporter never raises it (docs/spec.md §6).
    FUTURE_GENERATION = "FutureGeneration"


class Actor(StrEnum):
    ENDPOINT_OPERATOR = "endpoint-operator"
    METRICS_COLLECTOR = "metrics-collector"
