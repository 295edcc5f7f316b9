"""What a scenario step may expect (docs/reference/scenarios.md): the models of `expect`, with
a condition's status, time and reason read as the scenario's profile writes them."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationInfo,
)

from statemachines.conditions import format_time
from statemachines.health.vocabulary import HEALTHY_CONDITION_RULE
from statemachines.reports import GENERATION_LIMIT, VerdictKind
from statemachines.settings import parse_duration
from statemachines.vocabulary import (
    PROFILES,
    SEED,
    ConditionType,
    Profile,
    ReadyReason,
    Reason,
    Rule,
    State,
)

__all__ = [
    "EPOCH",
    "CollectorExpectation",
    "ConditionExpectation",
    "Expectation",
    "Generation",
    "HistoryExpectation",
    "LastKnownGoodExpectation",
    "RelatedObjectShape",
    "ResourceExpectation",
    "Shape",
]

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)  # the fake clock's start; `at` is an offset from it


def _status_text(value: object) -> object:
    """YAML reads an unquoted `True` as a boolean; a condition's status is the string."""
    return {True: "True", False: "False"}.get(value, value) if isinstance(value, bool) else value


def _expected_time(value: object) -> str:
    """An offset from the start (`13m`), or an RFC 3339 time; compared in whole seconds."""
    if isinstance(value, datetime):
        return format_time(value)
    try:
        return format_time(EPOCH + parse_duration(value))
    except ValueError:
        try:
            return format_time(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
        except ValueError as error:
            raise ValueError(f"{value!r} is neither an offset nor a time") from error


_READY_REASONS = {r.value for r in ReadyReason}  # the same in every profile (docs/spec.md §10)
# Every profile's spelling of every reason: an expectation must use its own profile's.
_ANY_PROFILES_NAME = {p.name_of(r) for p in PROFILES.values() for r in Reason}


# Reasons written on conditions that are no collector's event: `ResourcesHealthy`'s
# (docs/spec.md §8).
_NOT_EVENTS = {HEALTHY_CONDITION_RULE}


def _expected_reason(value: object, info: ValidationInfo) -> object:
    """A reason as the scenario's profile writes it (the seed's `UpdateSuccesful` too)."""
    profile: Profile = (info.context or {}).get("profile", SEED)
    if not isinstance(value, str):
        return value
    if value in profile.aliases and value not in _ANY_PROFILES_NAME:
        return profile.name_of(profile.aliases[value])
    written = sorted(
        {profile.name_of(r.reason) for r in profile.reasons} | _READY_REASONS | _NOT_EVENTS
    )
    if value not in written:
        raise ValueError(
            f"{value!r} is not a reason the {profile.name} profile writes; "
            f"expected one of {', '.join(written)}"
        )
    return value


Generation = Annotated[StrictInt, Field(ge=1, lt=GENERATION_LIMIT)]
ConditionStatus = Annotated[Literal["True", "False", "Unknown"], BeforeValidator(_status_text)]
ExpectedTime = Annotated[str, BeforeValidator(_expected_time)]
ExpectedReason = Annotated[str, BeforeValidator(_expected_reason)]


class Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ConditionExpectation(Shape):
    """Fields of a stored condition; only those given are compared."""

    status: ConditionStatus | None = None
    reason: ExpectedReason | None = None
    message: str | None = None
    observed_generation: StrictInt | None = Field(None, alias="observedGeneration")
    last_transition_time: ExpectedTime | None = Field(None, alias="lastTransitionTime")

    def fields(self) -> dict[str, Any]:
        """The expected fields as the CR spells them (`lastTransitionTime`, `"True"`)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class CollectorExpectation(ConditionExpectation):
    """A collector's condition, plus its machine state (the one underneath while stale)."""

    state: State | None = None
    stale: StrictBool | None = None
    pending_since: ExpectedTime | None = Field(None, alias="pendingSince")


class ResourceExpectation(Shape):
    """A `status.resources[]` entry's `Healthy` condition (the counted health); `pending` the
    reason of a result held back by `for` (null: none pending)."""

    status: ConditionStatus | None = None
    reason: str | None = None
    message: str | None = None
    last_transition_time: ExpectedTime | None = Field(None, alias="lastTransitionTime")
    pending: str | None = None

    def fields(self) -> dict[str, Any]:
        given = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        return {k: v for k, v in given.items() if v is not None or k == "pending"}


class HistoryExpectation(Shape):
    """An entry of `status.history`; only the fields given are compared."""

    type: ConditionType | None = None
    reason: StrictStr | None = None  # as written: the history may hold reasons of any profile
    message: str | None = None
    last_transition_time: ExpectedTime | None = Field(None, alias="lastTransitionTime")

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class LastKnownGoodExpectation(Shape):
    generation: Generation | None = None
    since: ExpectedTime | None = None

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RelatedObjectShape(Shape):
    """`{group, resource, namespace, name}`; in an expectation only the fields given count."""

    group: StrictStr | None = None
    resource: StrictStr | None = None
    namespace: StrictStr | None = None
    name: StrictStr | None = None

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Expectation(Shape):
    verdict: VerdictKind | None = None  # of the step's report
    rule: Rule | None = None  # the rule that refused it
    addon: ConditionType | None = None  # the standard type that is True
    conditions: dict[str, ConditionExpectation] = Field(default_factory=dict)
    collectors: dict[str, CollectorExpectation] = Field(default_factory=dict)
    resources: dict[str, ResourceExpectation] = Field(default_factory=dict)
    # docs/spec.md §9: installed versions (null: none known), the newest history entries (newest
    # first), related objects that must be present; docs/spec.md §10: the last known good
    # generation.
    versions: dict[str, StrictStr | None] = Field(default_factory=dict)
    history: list[HistoryExpectation] | None = None
    related_objects: list[RelatedObjectShape] = Field(default_factory=list, alias="relatedObjects")
    last_known_good: LastKnownGoodExpectation | None = Field(None, alias="lastKnownGood")
