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
from datetime import timedelta
from itertools import pairwise
from typing import Any, Literal

from pydantic import (
    Field,
    ValidationError,
)

from statemachines.config import Config
from statemachines.errors import ConfigError, ReportError, ScenarioError
from statemachines.expectations import (
    EPOCH,
    CollectorExpectation,
    ConditionExpectation,
    Expectation,
    Generation,
    HistoryExpectation,
    LastKnownGoodExpectation,
    RelatedObjectShape,
    ResourceExpectation,
    Shape,
)
from statemachines.health import RESOURCES_HEALTHY, load_resources
from statemachines.object_names import ADDON_NAMESPACE
from statemachines.related import RelatedObject
from statemachines.reports import Report, parse_report
from statemachines.settings import Duration, Settings
from statemachines.shape import shape_problem
from statemachines.vocabulary import (
    PROFILES,
    READY,
    SEED,
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

NAMESPACE = ADDON_NAMESPACE  # the addon CR's (the default of `run`)


class ObjectStep(Shape):
    """A watched object as the API server now returns it (`value`), or deleted."""

    resource: str
    value: dict[str, Any] | None = None
    deleted: Literal[True] | None = None


class StepFile(Shape):
    at: Duration
    generation: Generation | None = None  # the CR's spec changed: its metadata.generation now
    report: dict[str, Any] | None = None  # judged against the configuration by parse_report
    object: ObjectStep | None = None  # a watched object changed or was deleted (docs/spec.md §8)
    expect: Expectation | None = None
    note: str = ""


class ScenarioFile(Shape):
    """The whole file, as written."""

    name: str | None = None
    description: str = ""
    profile: Literal["seed", "acm"] = "seed"  # the names written, and expected (docs/spec.md §11)
    generation: Generation = 1  # the CR's metadata.generation at the start
    settings: Settings = Field(default_factory=Settings)
    collector_settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict, alias="collectorSettings"
    )
    collectors: list[str] | None = None
    resources: list[Any] | None = None  # docs/spec.md §8, validated by health.load_resources
    # What the configuration adds to status.relatedObjects (docs/spec.md §9).
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
