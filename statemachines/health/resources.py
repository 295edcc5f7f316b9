"""The configuration of health rules: `resources` of the configuration file and of scenarios.

Validated with pydantic when the configuration is loaded; JSONPath keys and CEL expressions are
compiled then, so a mistake stops the start (or makes a scenario invalid) with one line naming
the path in the file, the resource and what is wrong, and evaluation never parses anything.

    - name: metrics-collector-deployment      # unique, a DNS label
      collector: metrics-collector            # optional: without it, every counted collector
      object: {apiVersion: apps/v1, kind: Deployment, name: metrics-collector}
                                              # object.namespace: default the addon's
      for: 2m                                 # optional, default 0s
      healthRule: {singleConditionType: Available}   # exactly one of the four rules
"""

from __future__ import annotations

import re
from collections.abc import Collection
from datetime import timedelta
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from statemachines.errors import ConfigError
from statemachines.health.expressions import Expression
from statemachines.health.paths import FieldPath
from statemachines.settings import Duration
from statemachines.vocabulary import REASON_PATTERN

MAX_RESOURCES = 64  # the CRD's maxItems of status.resources

__all__ = [
    "AlwaysHealthy",
    "CelRule",
    "ConditionMatcher",
    "FieldMatcher",
    "HealthRule",
    "Matchers",
    "MultiMatch",
    "ObjectRef",
    "Operator",
    "Resource",
    "load_resources",
]

CompiledPath = Annotated[FieldPath, BeforeValidator(FieldPath.compile)]
CompiledExpression = Annotated[Expression, BeforeValidator(Expression.compile)]
NonEmpty = Annotated[str, Field(min_length=1)]
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _dns_label(name: str) -> str:
    if len(name) > 63 or not _DNS_LABEL.match(name):
        raise ValueError(
            f"{name!r} is not a DNS label (lowercase letters, digits and '-', at most 63)"
        )
    return name


DnsLabel = Annotated[str, AfterValidator(_dns_label)]


class _Model(BaseModel):
    # defer_build: the schemas are built at the first configuration with resources, not when
    # the core is imported.
    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        populate_by_name=True,
        arbitrary_types_allowed=True,
        defer_build=True,
    )


class ObjectRef(_Model):
    """The watched object; `namespace` is the addon's unless given. The lengths are those the
    CRD keeps for `status.resources[].object` and `status.relatedObjects[]`."""

    api_version: Annotated[str, Field(min_length=1, max_length=316)] = Field(alias="apiVersion")
    kind: Annotated[str, Field(min_length=1, max_length=63)]
    name: Annotated[str, Field(min_length=1, max_length=253)]
    namespace: Annotated[str, Field(max_length=63)] | None = None

    @model_validator(mode="after")
    def _plural_fits(self) -> ObjectRef:
        if len(self.plural) > 63:
            raise ValueError(
                f"kind {self.kind!r}: its resource {self.plural!r} is longer than the 63"
                " characters status.relatedObjects keeps"
            )
        return self

    @property
    def group(self) -> str:
        """The API group ("" for the core group)."""
        return self.api_version.rpartition("/")[0]

    @property
    def plural(self) -> str:
        """The resource, as apimachinery's `meta.UnsafeGuessKindToResource` names a kind (what
        kubectl and the API server derive): lower case, then `-s` -> `-ses`, consonant + `-y`
        -> `-ies`, else `+s` (`Deployment` -> `deployments`, `Ingress` -> `ingresses`)."""
        lower = self.kind.lower()
        if lower.endswith("s"):
            return lower + "es"
        if lower.endswith("y") and len(lower) > 1 and lower[-2] not in "aeiou":
            return lower[:-1] + "ies"
        return lower + "s"

    def to_api(self) -> dict[str, Any]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "namespace": self.namespace or "",
            "name": self.name,
        }


class AlwaysHealthy(_Model):
    """`alwaysHealthy: {}`: no field."""


class ConditionMatcher(_Model):
    type: NonEmpty
    status: NonEmpty


class Operator(StrEnum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


class FieldMatcher(_Model):
    key: CompiledPath
    operator: Operator
    values: tuple[str, ...] | None = None
    message_path: CompiledPath | None = Field(default=None, alias="messagePath")

    @model_validator(mode="after")
    def _values_fit_the_operator(self) -> FieldMatcher:
        takes_values = self.operator in (Operator.IN, Operator.NOT_IN)
        if takes_values and not self.values:
            raise ValueError(f"operator {self.operator.value} needs a non-empty `values`")
        if not takes_values and self.values is not None:
            raise ValueError(f"operator {self.operator.value} takes no `values`")
        return self


class Matchers(_Model):
    """One side of `multiMatch`; the healthy side's matchers are ANDed, the unhealthy's ORed."""

    match_conditions: tuple[ConditionMatcher, ...] = Field(default=(), alias="matchConditions")
    match_fields: tuple[FieldMatcher, ...] = Field(default=(), alias="matchFields")

    @model_validator(mode="after")
    def _not_empty(self) -> Matchers:
        if not self.match_conditions and not self.match_fields:
            raise ValueError("needs at least one of matchConditions and matchFields")
        return self


class MultiMatch(_Model):
    healthy: Matchers
    unhealthy: Matchers


class CelRule(_Model):
    """Flux RFC-0009's expressions; `current` is required, the other two optional."""

    current: CompiledExpression
    failed: CompiledExpression | None = None
    in_progress: CompiledExpression | None = Field(default=None, alias="inProgress")


class HealthRule(_Model):
    """Exactly one of the four rules of docs/spec.md §8."""

    always_healthy: AlwaysHealthy | None = Field(default=None, alias="alwaysHealthy")
    single_condition_type: NonEmpty | None = Field(default=None, alias="singleConditionType")
    multi_match: MultiMatch | None = Field(default=None, alias="multiMatch")
    cel: CelRule | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> HealthRule:
        given = [
            name
            for name, value in (
                ("alwaysHealthy", self.always_healthy),
                ("singleConditionType", self.single_condition_type),
                ("multiMatch", self.multi_match),
                ("cel", self.cel),
            )
            if value is not None
        ]
        if len(given) != 1:
            raise ValueError(
                "exactly one of alwaysHealthy, singleConditionType, multiMatch and cel is needed;"
                f" got {', '.join(given) if given else 'none'}"
            )
        condition = self.single_condition_type
        if condition is not None and len(f"{condition}Condition") > 1024:
            raise ValueError(
                f"singleConditionType {condition[:40]!r}...: its reason <T>Condition would be"
                " longer than the 1024 characters a condition's reason may have"
            )
        if condition is not None and not REASON_PATTERN.match(f"{condition}Condition"):
            raise ValueError(
                f"singleConditionType {condition!r} cannot make the reason {condition}Condition"
                " (letters, digits, '_', ',' and ':' only)"
            )
        return self


class Resource(_Model):
    """A configured resource: which object, which collector it speaks for, its rule and `for`."""

    name: DnsLabel
    object: ObjectRef
    collector: NonEmpty | None = None
    for_: Duration = Field(default=timedelta(0), alias="for")
    health_rule: HealthRule = Field(alias="healthRule")

    def speaks_for(self, collector: str) -> bool:
        return self.collector is None or self.collector == collector


def load_resources(
    raw: object, *, namespace: str, collectors: Collection[str], where: str = "resources"
) -> tuple[Resource, ...]:
    """The validated, compiled `resources` list; objects without a namespace get `namespace`.

    `where` is the list's path in the file. Raises ConfigError with one line such as
    `resources[1] (cert).healthRule.cel.current: CEL '...' does not compile: ...`.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: expected a list of resources, not {type(raw).__name__}")
    if len(raw) > MAX_RESOURCES:  # refused before thousands of rules are compiled
        raise ConfigError(
            f"{where}: {len(raw)} configured; the CRD keeps at most {MAX_RESOURCES} in "
            "status.resources"
        )
    resources: list[Resource] = []
    for index, item in enumerate(raw):
        here = f"{where}[{index}]"
        name = item.get("name") if isinstance(item, dict) else None
        try:
            resource = Resource.model_validate(item)
        except ValidationError as error:
            named = f"{here} ({name})" if isinstance(name, str) else here
            raise ConfigError(_first_problem(named, error)) from error
        _check_unique_and_known(resource, here, resources, collectors)
        if resource.object.namespace is None:
            filled = resource.object.model_copy(update={"namespace": namespace})
            resource = resource.model_copy(update={"object": filled})
        resources.append(resource)
    return tuple(resources)


def _check_unique_and_known(
    resource: Resource, here: str, earlier: list[Resource], collectors: Collection[str]
) -> None:
    for index, other in enumerate(earlier):
        if other.name == resource.name:
            raise ConfigError(f"{here}.name: {resource.name!r} is already resources[{index}]")
    if resource.collector is not None and resource.collector not in collectors:
        known = ", ".join(collectors)
        raise ConfigError(
            f"{here} ({resource.name}).collector: {resource.collector!r} is not a configured"
            f" collector ({known})"
        )


def _first_problem(here: str, error: ValidationError) -> str:
    detail = error.errors()[0]
    path = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in detail["loc"])
    message = str(detail["msg"]).removeprefix("Value error, ")
    return f"{here}{path}: {message}"
