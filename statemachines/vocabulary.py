"""The vocabulary of addon status: condition types, reasons, actors and collectors, as one table.

The names themselves are `statemachines.names`' enums, re-exported here. The table is
validated data (pydantic), so a profile other than the seed's can be loaded and is checked the
same way.
"""

from __future__ import annotations

import functools
import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from statemachines.names import (
    READY,
    REASON_PATTERN,
    Actor,
    ConditionType,
    ReadyReason,
    Reason,
    Rule,
    State,
)

__all__ = [
    "ACM",
    "PROFILES",
    "READY",
    "REASON_PATTERN",
    "SEED",
    "Actor",
    "CollectorSpec",
    "ConditionType",
    "Profile",
    "ReadyReason",
    "Reason",
    "ReasonSpec",
    "Rule",
    "State",
]


class ReasonSpec(BaseModel):
    """One row of the vocabulary: who may report a reason, and where it leads."""

    model_config = ConfigDict(frozen=True)

    reason: Reason
    reported_by: Actor | None  # None: the controller's own reason, never reportable
    leads_to: ConditionType
    precedence: int | None = None  # higher wins in aggregation; None: not aggregated


class CollectorSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")]
    condition_type: Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9]*$")]
    primary: bool = False

    @property
    def display_name(self) -> str:
        """How the aggregated message names the collector (`MetricsCollector`)."""
        return self.condition_type.removesuffix("Status")


class Profile(BaseModel):
    """A complete vocabulary: the reasons table, the collectors, and accepted spellings.

    A profile only names things (docs/spec.md §11): the standard types it writes, how it spells each
    reason (`written`, default the reason's own name), the precedence ranks, and whether the
    addon's CRD keeps our bookkeeping (`status.collectors`, `observedGeneration`) in the status.
    """

    model_config = ConfigDict(frozen=True)

    name: str
    reasons: tuple[ReasonSpec, ...]
    collectors: tuple[CollectorSpec, ...]
    aliases: dict[str, Reason] = Field(default_factory=dict)
    standard_types: tuple[ConditionType, ...] = tuple(ConditionType)
    written: dict[Reason, str] = Field(default_factory=dict)
    # False: the CRD keeps only conditions' type, status, reason, message, lastTransitionTime
    # (upstream's); the rest lives in the `<addon>-status` ConfigMap.
    status_keeps_bookkeeping: bool = True

    @model_validator(mode="after")
    def _check(self) -> Profile:
        names = [r.reason for r in self.reasons]
        if len(set(names)) != len(names):
            raise ValueError("a reason appears twice in the reasons table")
        ranks = [r.precedence for r in self.reasons if r.precedence is not None]
        if len(set(ranks)) != len(ranks):
            raise ValueError("precedence must be a total order: two reasons share a rank")
        if sum(c.primary for c in self.collectors) != 1:
            raise ValueError("exactly one collector must be the primary one")
        if stray := {r.leads_to for r in self.reasons} - set(self.standard_types):
            raise ValueError(f"a reason leads to {sorted(stray)}, not a standard type written")
        return self

    def name_of(self, reason: Reason) -> str:
        """How this profile writes `reason` on the CR."""
        return self._names[reason]

    @functools.cached_property
    def _names(self) -> dict[Reason, str]:
        """Every reason as written: asked several times for every status written."""
        return {r: self.written.get(r, r.value) for r in Reason}

    def spelled(self, text: str) -> str:
        """`text` (a verdict's detail, an Event's message: words the core puts together from
        reasons' own names) with each reason spelled as this profile writes it."""
        if not self.written:
            return text
        names = "|".join(sorted((r.value for r in self.written), key=len, reverse=True))
        return re.sub(rf"\b({names})\b", lambda m: self.name_of(Reason(m[1])), text)

    def spec(self, reason: Reason) -> ReasonSpec:
        return self._specs[reason]  # KeyError for a reason the table lacks

    @functools.cached_property
    def _specs(self) -> dict[Reason, ReasonSpec]:
        """The table by reason: the aggregator asks it for every collector of every write."""
        return {row.reason: row for row in self.reasons}

    def parse_reason(self, text: str) -> Reason | None:
        """The reportable reason spelled `text` (as written here, or an alias), or None."""
        if text in self.aliases:
            return self.aliases[text]
        return next(
            (r.reason for r in self.reasons if r.reported_by and self.name_of(r.reason) == text),
            None,
        )

    def collector(self, name: str) -> CollectorSpec | None:
        return next((c for c in self.collectors if c.name == name), None)

    def reportable(self) -> list[str]:
        return [self.name_of(r.reason) for r in self.reasons if r.reported_by is not None]


def _row(
    reason: Reason, by: Actor | None, leads_to: ConditionType, precedence: int | None
) -> ReasonSpec:
    return ReasonSpec(reason=reason, reported_by=by, leads_to=leads_to, precedence=precedence)


_OP, _MC, T = Actor.ENDPOINT_OPERATOR, Actor.METRICS_COLLECTOR, ConditionType

# The acm profile's spellings where they differ from the seed's.
_ACM_NAMES = {
    Reason.FORWARD_FAILURE: "ForwardFailed",
    Reason.UPDATE_FAILURE: "UpdateFailed",
    Reason.DISABLED_METRICS: "Disabled",
}

SEED = Profile(
    name="seed",
    reasons=(
        # ForwardFailure > ResourceUnhealthy > ReportsStale > UpdateFailure > UpdateSuccessful
        #   > ForwardSuccessful
        _row(Reason.FORWARD_FAILURE, _MC, T.DEGRADED, 6),
        _row(Reason.RESOURCE_UNHEALTHY, None, T.DEGRADED, 5),
        _row(Reason.REPORTS_STALE, None, T.DEGRADED, 4),
        _row(Reason.UPDATE_FAILURE, _OP, T.DEGRADED, 3),
        _row(Reason.UPDATE_SUCCESSFUL, _OP, T.PROGRESSING, 2),
        _row(Reason.FORWARD_SUCCESSFUL, _MC, T.AVAILABLE, 1),
        _row(Reason.DISABLED_METRICS, _OP, T.DISABLED, None),
        _row(Reason.NOT_SUPPORTED, _OP, T.NOT_SUPPORTED, None),
        _row(Reason.NO_REPORT_YET, None, T.PROGRESSING, None),
    ),
    collectors=(
        CollectorSpec(
            name="metrics-collector", condition_type="MetricsCollectorStatus", primary=True
        ),
        CollectorSpec(name="uwl-metrics-collector", condition_type="UwlMetricsCollectorStatus"),
    ),
    # The seed design spells it this way; accepted on input, never written. Reports may use
    # either profile's names.
    aliases={"UpdateSuccesful": Reason.UPDATE_SUCCESSFUL, **{v: r for r, v in _ACM_NAMES.items()}},
)

# docs/spec.md §11: what the shipped observability addon writes, for hubs that read it unchanged.
# NotSupported > UpdateFailed > ForwardFailed > ResourceUnhealthy > ReportsStale
#   > UpdateSuccessful > ForwardSuccessful > Disabled; Disabled and NotSupported are Degraded.
ACM = Profile(
    name="acm",
    reasons=(
        _row(Reason.NOT_SUPPORTED, _OP, T.DEGRADED, 8),
        _row(Reason.UPDATE_FAILURE, _OP, T.DEGRADED, 7),
        _row(Reason.FORWARD_FAILURE, _MC, T.DEGRADED, 6),
        _row(Reason.RESOURCE_UNHEALTHY, None, T.DEGRADED, 5),
        _row(Reason.REPORTS_STALE, None, T.DEGRADED, 4),
        _row(Reason.UPDATE_SUCCESSFUL, _OP, T.PROGRESSING, 3),
        _row(Reason.FORWARD_SUCCESSFUL, _MC, T.AVAILABLE, 2),
        _row(Reason.DISABLED_METRICS, _OP, T.DEGRADED, 1),
        _row(Reason.NO_REPORT_YET, None, T.PROGRESSING, None),
    ),
    collectors=(
        CollectorSpec(name="metrics-collector", condition_type="MetricsCollector", primary=True),
        CollectorSpec(name="uwl-metrics-collector", condition_type="UwlMetricsCollector"),
    ),
    aliases={
        "UpdateSuccesful": Reason.UPDATE_SUCCESSFUL,
        **{r.value: r for r in _ACM_NAMES},  # the seed's names
    },
    standard_types=(T.AVAILABLE, T.PROGRESSING, T.DEGRADED),
    written=_ACM_NAMES,
    status_keeps_bookkeeping=False,
)

PROFILES = {p.name: p for p in (SEED, ACM)}
