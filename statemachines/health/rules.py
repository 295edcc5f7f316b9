"""The four health rules of docs/spec.md §8 (Cartographer's `healthyConditionRule`, Flux RFC-0009's
CEL checks): the object as the API server returns it -> `Healthy`, `Unhealthy` or `Unknown`,
with a reason and a message. Pure: no clock, no I/O; a malformed object is a result, never an
exception.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from statemachines.health.expressions import EvaluationFailed, Variables
from statemachines.health.resources import (
    CelRule,
    ConditionMatcher,
    FieldMatcher,
    Matchers,
    MultiMatch,
    Operator,
    Resource,
)
from statemachines.health.vocabulary import Health, HealthReason
from statemachines.size import RESOURCE_MESSAGE, cut

__all__ = ["Result", "cel", "evaluate", "multi_match", "not_found", "single_condition_type"]

_ABSENT = "<absent>"


@dataclass(frozen=True, slots=True)
class Result:
    """One evaluation: what the object shows now, before `for` (see `counted`)."""

    health: Health
    reason: str
    message: str = ""

    def __post_init__(self) -> None:
        # A message path or an expression's error may quote a whole object: cut, never refuse
        # (docs/spec.md §6: a resource's message is at most 1,024 characters).
        object.__setattr__(self, "message", cut(self.message, RESOURCE_MESSAGE))


def evaluate(resource: Resource, obj: Mapping[str, Any] | None) -> Result:
    """`resource`'s rule applied to `obj`, the object now; None when it does not exist."""
    if obj is None:
        return not_found(resource)
    rule = resource.health_rule
    if rule.always_healthy is not None:
        return Result(Health.HEALTHY, HealthReason.ALWAYS_HEALTHY)
    if rule.single_condition_type is not None:
        return single_condition_type(rule.single_condition_type, obj)
    if rule.multi_match is not None:
        return multi_match(rule.multi_match, obj)
    assert rule.cel is not None  # HealthRule holds exactly one rule
    return cel(rule.cel, obj)


def not_found(resource: Resource) -> Result:
    ref = resource.object
    where = f"{ref.namespace}/{ref.name}" if ref.namespace else ref.name
    return Result(Health.UNKNOWN, HealthReason.NOT_FOUND, f"{ref.kind} {where} not found")


def single_condition_type(type_: str, obj: Mapping[str, Any]) -> Result:
    """`True` -> Healthy, `False` -> Unhealthy, anything else (or no such condition) -> Unknown;
    reason `<T>Condition`, message the condition's own."""
    reason = f"{type_}Condition"
    condition = _condition(obj, type_)
    if condition is None:
        return Result(Health.UNKNOWN, reason, f"no condition {type_}")
    status = condition.get("status")
    health = {"True": Health.HEALTHY, "False": Health.UNHEALTHY}.get(str(status), Health.UNKNOWN)
    return Result(health, reason, str(condition.get("message") or ""))


def multi_match(rule: MultiMatch, obj: Mapping[str, Any]) -> Result:
    """The unhealthy matchers first, ORed: the first that matches decides. Then the healthy
    ones, ANDed: all must match (the first gives the message). Else `NoMatchesFulfilled`. A key
    that cannot be followed through the object is `Unhealthy`/`EvaluationError`, as a CEL
    expression that fails is (never the old result kept in silence)."""
    try:
        return _multi_match(rule, obj)
    except EvaluationFailed as error:
        return Result(Health.UNHEALTHY, HealthReason.EVALUATION_ERROR, str(error))


def _multi_match(rule: MultiMatch, obj: Mapping[str, Any]) -> Result:
    for matched in _each(rule.unhealthy, obj):
        if matched is not None:
            return Result(Health.UNHEALTHY, *matched)
    healthy = list(_each(rule.healthy, obj))
    first = healthy[0]  # a side has at least one matcher (checked at load)
    if first is not None and all(m is not None for m in healthy):
        return Result(Health.HEALTHY, *first)
    missing = next(m for m, hit in zip(_matchers(rule.healthy), healthy, strict=True) if not hit)
    return Result(
        Health.UNKNOWN,
        HealthReason.NO_MATCHES_FULFILLED,
        f"healthy needs {_describe(missing)}",
    )


def cel(rule: CelRule, obj: Mapping[str, Any]) -> Result:
    """RFC-0009: a stale `status.observedGeneration` is `InProgress` without evaluating; then
    `inProgress`, `failed`, `current` in that order, the first true deciding; none true is
    `InProgress`. An expression that fails on this object is `Unhealthy` / `EvaluationError`."""
    stale = _stale_generation(obj)
    if stale is not None:
        return Result(Health.UNKNOWN, HealthReason.IN_PROGRESS, stale)
    steps = (
        ("inProgress", rule.in_progress, Health.UNKNOWN, HealthReason.IN_PROGRESS),
        ("failed", rule.failed, Health.UNHEALTHY, HealthReason.FAILED),
        ("current", rule.current, Health.HEALTHY, HealthReason.CURRENT),
    )
    variables = Variables.of(obj)
    for name, expression, health, reason in steps:
        if expression is None:
            continue
        try:
            holds = expression.holds(variables)
        except EvaluationFailed as error:
            message = f"{name} {expression.text!r}: {error}"
            return Result(Health.UNHEALTHY, HealthReason.EVALUATION_ERROR, message)
        if holds:
            return Result(health, reason, _cel_message(name, expression.text, obj))
    return Result(Health.UNKNOWN, HealthReason.IN_PROGRESS, "no expression is true")


def _cel_message(name: str, source: str, obj: Mapping[str, Any]) -> str:
    """What a person reads (docs/spec.md §6): the object's own word, not the expression's
    source. Of the conditions the expression names, in its order, the first in the state the
    expression found (`True` for `current`, not `True` for `failed`, any for `inProgress`), as
    `<type>: <status>` plus its message, as a matched condition says it; else which expression
    was true."""
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    found: dict[str, Mapping[str, Any]] = {}
    for c in conditions if isinstance(conditions, list) else ():
        if isinstance(c, Mapping) and isinstance(c.get("type"), str):
            found.setdefault(c["type"], c)
    named = [(_position(source, t), t) for t in found if _position(source, t) >= 0]
    for _, type_ in sorted(named):
        condition = found[type_]
        if name != "inProgress" and (condition.get("status") == "True") != (name == "current"):
            continue  # `failed` speaks of a condition not True, `current` of one True
        message = f"{type_}: {condition.get('status')}"
        if condition.get("message"):
            message += f": {condition['message']}"
        return message
    return f"the {name} expression is true"


def _position(source: str, type_: str) -> int:
    """Where the expression names the condition type as a string literal (-1: nowhere)."""
    found = [p for quote in "'\"" if (p := source.find(f"{quote}{type_}{quote}")) >= 0]
    return min(found, default=-1)


def _stale_generation(obj: Mapping[str, Any]) -> str | None:
    """Why the object's status is not about its spec yet: an `observedGeneration` that is set
    and differs from `metadata.generation`; None when it is absent or equal."""
    status, metadata = obj.get("status"), obj.get("metadata")
    observed = status.get("observedGeneration") if isinstance(status, Mapping) else None
    generation = metadata.get("generation") if isinstance(metadata, Mapping) else None
    if observed is None or observed == generation:
        return None
    return f"status.observedGeneration {observed} is not metadata.generation {generation}"


# --- multiMatch's matchers -----------------------------------------------------------------

Matcher = ConditionMatcher | FieldMatcher


def _matchers(side: Matchers) -> tuple[Matcher, ...]:
    """Conditions first, then fields, each in configuration order: the order they are read."""
    return (*side.match_conditions, *side.match_fields)


def _each(side: Matchers, obj: Mapping[str, Any]) -> Iterator[tuple[str, str] | None]:
    """(reason, message) of each matcher that matches, None for one that does not; lazily, so
    the ORed side stops at its first match."""
    for matcher in _matchers(side):
        if isinstance(matcher, ConditionMatcher):
            yield _match_condition(matcher, obj)
        else:
            yield _match_field(matcher, obj)


def _match_condition(matcher: ConditionMatcher, obj: Mapping[str, Any]) -> tuple[str, str] | None:
    condition = _condition(obj, matcher.type)
    if condition is None or str(condition.get("status")) != matcher.status:
        return None
    message = f"{matcher.type}: {matcher.status}"
    if condition.get("message"):
        message += f": {condition['message']}"
    return HealthReason.MATCHED_CONDITION, message


def _match_field(matcher: FieldMatcher, obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """A key that resolves to nothing: `Exists` false, `DoesNotExist` true, `In` false, `NotIn`
    true. A key that resolves to several values: `In` if one is listed, `NotIn` if none is."""
    found = [_text(value) for value in matcher.key.values(obj)]
    listed = [text for text in found if text in (matcher.values or ())]
    shown = {
        Operator.IN: listed[0] if listed else None,
        Operator.NOT_IN: (found[0] if found else _ABSENT) if not listed else None,
        Operator.EXISTS: found[0] if found else None,
        Operator.DOES_NOT_EXIST: _ABSENT if not found else None,
    }[matcher.operator]
    if shown is None:
        return None
    message = f"{matcher.key.text}: {shown}"
    if matcher.message_path is not None:
        extra = matcher.message_path.values(obj)
        if extra:
            message += f": {_text(extra[0])}"
    return HealthReason.MATCHED_FIELD, message


def _describe(matcher: Matcher) -> str:
    """`Ready: True`, `status.phase NotIn [Pending, Failed]`, `status.loadBalancer Exists`."""
    if isinstance(matcher, ConditionMatcher):
        return f"{matcher.type}: {matcher.status}"
    values = f" [{', '.join(matcher.values)}]" if matcher.values else ""
    return f"{matcher.key.text} {matcher.operator.value}{values}"


# --- reading the object ----------------------------------------------------------------------


def _condition(obj: Mapping[str, Any], type_: str) -> Mapping[str, Any] | None:
    status = obj.get("status")
    conditions = status.get("conditions") if isinstance(status, Mapping) else None
    if not isinstance(conditions, list):
        return None
    return next((c for c in conditions if isinstance(c, Mapping) and c.get("type") == type_), None)


def _text(value: Any) -> str:
    """A value as a matcher compares and a message shows it: strings as they are, anything
    else as compact JSON (`{}`, `3`, `true`)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), sort_keys=True, default=str)
