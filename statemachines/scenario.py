"""Scenarios: a YAML file of timed steps (reports, the CR's generation) and expectations.

The file's shape is described by pydantic models (`ScenarioFile` and the models under it, every
one `extra="forbid"`); `load` validates a text against them, then checks what the shape cannot
say (names configured, time and generation never going back) and returns the parsed `Scenario`
that `simulation.run` plays through the real core and `addon-status demo --scenario` plays end
to end. Every error names its place: `steps[3].report.reason: unknown reason 'Forward' ...`.

The format grows with the rules (docs/reference/scenarios.md): new top-level keys go on
`ScenarioFile` (and `Scenario`), new step kinds on `StepFile` (and `Step`), new expectation
tables on `Expectation`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
)

from statemachines.conditions import format_time
from statemachines.config import Config
from statemachines.errors import ConfigError, ReportError, ScenarioError
from statemachines.health import RESOURCES_HEALTHY, load_resources
from statemachines.health.vocabulary import HEALTHY_CONDITION_RULE
from statemachines.related import RelatedObject
from statemachines.reports import GENERATION_LIMIT, Report, VerdictKind, parse_report
from statemachines.settings import Duration, Settings, parse_duration
from statemachines.shape import shape_problem
from statemachines.vocabulary import (
    PROFILES,
    READY,
    SEED,
    ConditionType,
    Profile,
    ReadyReason,
    Reason,
    Rule,
    State,
)
from statemachines.yamlfile import YAMLFileError, load_yaml

__all__ = [
    "EPOCH",
    "CollectorExpectation",
    "ConditionExpectation",
    "Expectation",
    "HistoryExpectation",
    "LastKnownGoodExpectation",
    "ObjectChange",
    "ObjectStep",
    "RelatedObjectShape",
    "ResourceExpectation",
    "Scenario",
    "ScenarioFile",
    "Step",
    "StepFile",
    "load",
]

EPOCH = datetime(2025, 1, 1, tzinfo=UTC)  # the fake clock's start; `at` is an offset from it
NAMESPACE = "open-cluster-management-addon-observability"  # the addon CR's (the default of `run`)


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


_READY_REASONS = {r.value for r in ReadyReason}  # the same in every profile (section 10)
# Every profile's spelling of every reason: an expectation must use its own profile's.
_ANY_PROFILES_NAME = {p.name_of(r) for p in PROFILES.values() for r in Reason}


# Reasons written on conditions that are no collector's event: `ResourcesHealthy`'s (section 8).
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


class _Shape(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class ConditionExpectation(_Shape):
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


class ResourceExpectation(_Shape):
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


class HistoryExpectation(_Shape):
    """An entry of `status.history`; only the fields given are compared."""

    type: ConditionType | None = None
    reason: StrictStr | None = None  # as written: the history may hold reasons of any profile
    message: str | None = None
    last_transition_time: ExpectedTime | None = Field(None, alias="lastTransitionTime")

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class LastKnownGoodExpectation(_Shape):
    generation: Generation | None = None
    since: ExpectedTime | None = None

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class RelatedObjectShape(_Shape):
    """`{group, resource, namespace, name}`; in an expectation only the fields given count."""

    group: StrictStr | None = None
    resource: StrictStr | None = None
    namespace: StrictStr | None = None
    name: StrictStr | None = None

    def fields(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


class Expectation(_Shape):
    verdict: VerdictKind | None = None  # of the step's report
    rule: Rule | None = None  # the rule that refused it
    addon: ConditionType | None = None  # the standard type that is True
    conditions: dict[str, ConditionExpectation] = Field(default_factory=dict)
    collectors: dict[str, CollectorExpectation] = Field(default_factory=dict)
    resources: dict[str, ResourceExpectation] = Field(default_factory=dict)
    # Section 9: installed versions (null: none known), the newest history entries (newest
    # first), related objects that must be present; section 10: the last known good generation.
    versions: dict[str, StrictStr | None] = Field(default_factory=dict)
    history: list[HistoryExpectation] | None = None
    related_objects: list[RelatedObjectShape] = Field(default_factory=list, alias="relatedObjects")
    last_known_good: LastKnownGoodExpectation | None = Field(None, alias="lastKnownGood")


class ObjectStep(_Shape):
    """A watched object as the API server now returns it (`value`), or deleted."""

    resource: str
    value: dict[str, Any] | None = None
    deleted: Literal[True] | None = None


class StepFile(_Shape):
    at: Duration
    generation: Generation | None = None  # the CR's spec changed: its metadata.generation now
    report: dict[str, Any] | None = None  # judged against the configuration by parse_report
    object: ObjectStep | None = None  # a watched object changed or was deleted (section 8)
    expect: Expectation | None = None
    note: str = ""


class ScenarioFile(_Shape):
    """The whole file, as written."""

    name: str | None = None
    description: str = ""
    profile: Literal["seed", "acm"] = "seed"  # the names written, and expected (section 11)
    generation: Generation = 1  # the CR's metadata.generation at the start
    settings: Settings = Field(default_factory=Settings)
    collector_settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict, alias="collectorSettings"
    )
    collectors: list[str] | None = None
    resources: list[Any] | None = None  # section 8, validated by health.load_resources
    # What the configuration adds to status.relatedObjects (section 9).
    related_objects: list[RelatedObjectShape] = Field(default_factory=list, alias="relatedObjects")
    steps: list[StepFile] = Field(min_length=1)


@dataclass(frozen=True)
class ObjectChange:
    """The object of `resource` as the API server returns it, complete with apiVersion, kind,
    name and namespace; None when it was deleted."""

    resource: str
    value: dict[str, Any] | None


@dataclass(frozen=True)
class Step:
    """One step, parsed: at `at`, the CR's generation moves (if given), then the watched object
    changes (if any), then the report is judged (if any), then `expect` is checked (if any)."""

    index: int
    at: timedelta
    report: Report | None
    expect: Expectation | None
    note: str = ""
    generation: int | None = None
    object: ObjectChange | None = None


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    config: Config
    steps: tuple[Step, ...]
    generation: int = 1  # the CR's metadata.generation at the start


def load(text: str | bytes, *, source: str = "<scenario>") -> Scenario:
    """Parse and validate a scenario. Raises ScenarioError naming where the problem is."""
    try:
        raw = load_yaml(text)
    except YAMLFileError as error:
        where, _, problem = str(error).partition(": ")
        raise ScenarioError(where, problem) from None
    if not isinstance(raw, dict):
        raise ScenarioError("", "a scenario is a mapping with `steps`")
    profile = PROFILES.get(str(raw.get("profile", SEED.name)))
    if profile is None:
        known = ", ".join(PROFILES)
        raise ScenarioError("profile", f"unknown profile {raw['profile']!r}; known: {known}")
    try:
        shape = ScenarioFile.model_validate(raw, context={"profile": profile})
    except ValidationError as error:
        raise _invalid(error) from error
    config = _config(shape)
    steps = tuple(_step(step, index, config) for index, step in enumerate(shape.steps))
    _in_order(steps, shape.generation)
    return Scenario(shape.name or source, shape.description, config, steps, shape.generation)


def _invalid(error: ValidationError) -> ScenarioError:
    """The first problem pydantic found, as `path: problem`; an unknown key first, since a
    misspelt key also leaves the right one missing."""
    detail = min(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    where = ""
    for part in detail["loc"]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    problem = {"extra_forbidden": "unknown key", "missing": "required"}.get(detail["type"])
    if detail["type"] == "too_short":
        problem = "required, a non-empty list"
    return ScenarioError(where, problem or str(detail["msg"]).removeprefix("Value error, "))


def _config(shape: ScenarioFile) -> Config:
    related = []
    for index, given in enumerate(shape.related_objects):
        try:
            related.append(RelatedObject.from_api(given.fields()))
        except (KeyError, TypeError) as error:
            raise ScenarioError(f"relatedObjects[{index}]", str(error).strip("'")) from error
    try:
        names = shape.collectors or [c.name for c in PROFILES[shape.profile].collectors]
        resources = load_resources(shape.resources, namespace=NAMESPACE, collectors=names)
        config = Config.create(
            profile=PROFILES[shape.profile],
            collectors=shape.collectors,
            settings=shape.settings,
            collector_settings=shape.collector_settings,
            resources=resources,
            related_objects=related,
        )
    except ConfigError as error:
        where, _, problem = str(error).partition(": ")
        raise ScenarioError(where, problem) from error
    too_large = shape_problem(config)
    if too_large is not None:
        where, _, detail = too_large.partition(": ")
        raise ScenarioError(where if detail else "", detail or too_large)
    return config


def _step(shape: StepFile, index: int, config: Config) -> Step:
    where = f"steps[{index}]"
    given = (shape.report, shape.expect, shape.generation, shape.object)
    if all(part is None for part in given):
        raise ScenarioError(
            where, "a step needs a `report`, a `generation`, an `object`, an `expect` or more"
        )
    report = None
    if shape.report is not None:
        try:
            report = parse_report(shape.report, config)
        except ReportError as error:
            path = f"{where}.report.{error.field}" if error.field else f"{where}.report"
            raise ScenarioError(path, error.problem) from error
    if shape.expect is not None:
        _expectation_names(shape.expect, f"{where}.expect", config)
        if report is None and (shape.expect.verdict or shape.expect.rule):
            field = "verdict" if shape.expect.verdict else "rule"
            raise ScenarioError(f"{where}.expect.{field}", "this step has no report to judge")
    change = _object(shape.object, f"{where}.object", config) if shape.object else None
    return Step(index, shape.at, report, shape.expect, shape.note, shape.generation, change)


def _object(shape: ObjectStep, where: str, config: Config) -> ObjectChange:
    """The object as the API server would return it: identity filled in from the resource."""
    resource = next((r for r in config.resources if r.name == shape.resource), None)
    if resource is None:
        known = ", ".join(r.name for r in config.resources) or "none configured"
        raise ScenarioError(f"{where}.resource", f"unknown resource; expected one of {known}")
    if (shape.value is None) == (shape.deleted is None):
        raise ScenarioError(where, "needs exactly one of `value` and `deleted: true`")
    if shape.value is None:
        return ObjectChange(shape.resource, None)
    ref = resource.object
    metadata = {**(shape.value.get("metadata") or {}), "name": ref.name}
    metadata["namespace"] = ref.namespace
    value = {**shape.value, "apiVersion": ref.api_version, "kind": ref.kind, "metadata": metadata}
    return ObjectChange(shape.resource, value)


def _expectation_names(expect: Expectation, where: str, config: Config) -> None:
    """The standard type, condition types, collectors and resources must be ones this
    configuration writes."""
    standard = config.profile.standard_types
    if expect.addon is not None and expect.addon not in standard:
        listed = ", ".join(standard)
        problem = f"not a standard type of the {config.profile.name} profile ({listed})"
        raise ScenarioError(f"{where}.addon", problem)
    types = {*standard, READY, *(c.condition_type for c in config.collectors)}
    if config.resources:
        types.add(RESOURCES_HEALTHY)
    names = {c.name for c in config.collectors}
    tables: Mapping[str, tuple[Mapping[str, Any], set[str]]] = {
        "conditions": (expect.conditions, types),
        "collectors": (expect.collectors, names),
        "resources": (expect.resources, {r.name for r in config.resources}),
        "versions": (expect.versions, names),
    }
    for table, (given, known) in tables.items():
        for name in given:
            if name not in known:
                expected = ", ".join(sorted(known))
                problem = f"unknown; expected one of {expected}"
                raise ScenarioError(f"{where}.{table}.{name}", problem)


def _in_order(steps: tuple[Step, ...], generation: int) -> None:
    """`at` never decreases, and neither does the CR's generation."""
    for previous, step in pairwise(steps):
        if step.at < previous.at:
            problem = "goes back in time; `at` never decreases"
            raise ScenarioError(f"steps[{step.index}].at", problem)
    for step in steps:
        if step.generation is not None:
            if step.generation < generation:
                raise ScenarioError(
                    f"steps[{step.index}].generation",
                    f"goes back from {generation}; a CR's generation never decreases",
                )
            generation = step.generation
