"""How one ValidatingAdmissionPolicy decides one request, with kube-apiserver's CEL cost limits
(k8s.io/apiserver/pkg/apis/cel/config.go; admission/plugin/cel/activation.go, composition.go;
policy/validating/validator.go; webhook/matchconditions/matcher.go):

- each expression (and each variable) is one call, stopped past 1,000,000 with cel-go's
  `operation cancelled: actual cost limit exceeded`: the expression `resulted in error`;
- the validations of one binding share a budget of 10,000,000, its matchConditions one of
  2,500,000: an evaluation that takes the budget below zero ends them all with
  `validation failed due to running out of cost budget, no further validation rules will be
  run`; the messageExpressions spend what the validations left;
- `variables` are lazy: each is evaluated the first time an expression reads it (once for the
  validations, once more for the messages, which have a context of their own), and its cost is
  charged to the budget of the expression that read it. A variable that fails is an error of
  each expression that reads it: `composited variable "x" fails to evaluate: ...`.

Any of these errors is decided by `failurePolicy`: Fail denies with it (reason Invalid, 422),
Ignore admits."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from kubesim.admission_kinds import Declared, declare, program
from kubesim.cel_ast import Node
from kubesim.cel_eval import CelError, CostExceeded, Evaluation

__all__ = ["decide"]

_BUDGET: Final = 10_000_000  # RuntimeCELCostBudget
_MATCH_BUDGET: Final = 2_500_000  # RuntimeCELCostBudgetMatchConditions
_MESSAGE_BYTES: Final = 5 * 1024  # MaxEvaluatedMessageExpressionSizeBytes
OUT_OF_BUDGET: Final = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)


class _OutOfBudget(Exception):  # noqa: N818 - cel.ErrOutOfBudget
    pass


class _Variables(Mapping[str, Any]):
    """The lazy `variables` of one evaluation context (cel/lazy.MapValue)."""

    def __init__(self, variables: Sequence[Mapping[str, Any]], data: Mapping[str, Any]) -> None:
        # each compiled with the variables before it (composition.go)
        self._expressions = {str(v["name"]): (str(v["expression"]), declare(variables[:i]))
                             for i, v in enumerate(variables)}  # fmt: skip
        self.declared = declare(variables)
        self.data = data
        self._values: dict[str, Any] = {}
        self.cost = 0  # spent since the last expression took it

    def __getitem__(self, name: str) -> Any:
        if name not in self._expressions:
            raise KeyError(name)
        if name not in self._values:
            self._values[name] = CelError(f'composited variable "{name}" refers to itself')
            evaluation = Evaluation({**self.data, "variables": self})
            try:
                value = evaluation.run(_program(*self._expressions[name]))
            except (CelError, CostExceeded) as error:
                value = CelError(f'composited variable "{name}" fails to evaluate: {error}')
            self.cost += evaluation.cost
            self._values[name] = value
        value = self._values[name]
        if isinstance(value, CelError):
            raise value
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._expressions)

    def __len__(self) -> int:
        return len(self._expressions)

    def __contains__(self, name: object) -> bool:
        return name in self._expressions


def _program(expression: str, declared: Declared) -> Node:
    try:
        return program(expression, declared)
    except ValueError as error:  # as activation.go words an expression that did not compile
        raise CelError(f"compilation error: {error}") from None


def _evaluate(expression: str, variables: _Variables, remaining: int) -> tuple[Any, int]:
    """(the value, or the CelError of `expression '...' resulted in error: ...`; the budget
    left). Raises _OutOfBudget (activation.go's Evaluate)."""
    evaluation = Evaluation({**variables.data, "variables": variables})
    outcome: Any
    try:
        outcome = evaluation.run(_program(expression, variables.declared))
    except (CelError, CostExceeded) as error:
        outcome = CelError(f"expression '{expression}' resulted in error: {error}")
    for cost in (variables.cost, evaluation.cost):
        if cost > remaining:
            raise _OutOfBudget
        remaining -= cost
    variables.cost = 0
    return outcome, remaining


def decide(spec: Mapping[str, Any], data: Mapping[str, Any]) -> tuple[str, str] | None:
    """(message, reason) when the policy denies the request whose CEL variables are `data`."""
    fail = spec.get("failurePolicy", "Fail") == "Fail"
    declared = spec.get("variables") or []
    try:
        if not _matches(spec.get("matchConditions") or [], declared, data):
            return None
    except CelError as error:
        return (str(error), "Invalid") if fail else None
    outcomes: list[Any] = []
    validations = spec.get("validations") or []
    remaining = _BUDGET
    try:
        variables = _Variables(declared, data)
        for validation in validations:
            outcome, remaining = _evaluate(str(validation["expression"]), variables, remaining)
            outcomes.append(outcome)
    except _OutOfBudget:
        return (OUT_OF_BUDGET, "Invalid") if fail else None
    messages = _messages(validations, declared, data, remaining)
    for index, (validation, outcome) in enumerate(zip(validations, outcomes, strict=True)):
        if isinstance(outcome, CelError) or messages is None:
            if fail:  # an error denies with reason Invalid, whatever the validation's reason
                failed = isinstance(outcome, CelError)
                return str(outcome) if failed else f"failed messageExpression: {OUT_OF_BUDGET}", (
                    "Invalid"
                )
            continue
        if outcome is not True:
            reason = str(validation.get("reason") or "Invalid")
            return _message(validation, messages[index]), reason
    return None


def _matches(
    conditions: Sequence[Mapping[str, Any]], declared: Sequence[Any], data: Mapping[str, Any]
) -> bool:
    """matchconditions.Matcher: every condition is evaluated; any false is no match, else any
    error (all of them, as utilerrors' aggregate words them) is the failure policy's."""
    if not conditions:
        return True
    variables, remaining = _Variables(declared, data), _MATCH_BUDGET
    outcomes = []
    try:
        for condition in conditions:
            outcome, remaining = _evaluate(str(condition["expression"]), variables, remaining)
            outcomes.append(outcome)
    except _OutOfBudget:
        raise CelError(OUT_OF_BUDGET) from None
    if any(outcome is False for outcome in outcomes):
        return False
    errors = [str(outcome) for outcome in outcomes if isinstance(outcome, CelError)]
    if errors:
        raise CelError(errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return True


def _messages(
    validations: Sequence[Mapping[str, Any]], declared: Sequence[Any], data: Mapping[str, Any],
    remaining: int,
) -> list[Any] | None:  # fmt: skip
    """Each validation's messageExpression value (a CelError where it failed); None when they
    ran out of the budget the validations left."""
    variables = _Variables(declared, data)
    found: list[Any] = []
    try:
        for validation in validations:
            expression = validation.get("messageExpression")
            outcome = None
            if expression:
                outcome, remaining = _evaluate(str(expression), variables, remaining)
            found.append(outcome)
    except _OutOfBudget:
        return None
    return found


def _message(validation: Mapping[str, Any], found: Any) -> str:
    """validator.go: the messageExpression's string, trimmed, unless over 5 KiB or of several
    lines; else the message; else `failed expression: ...`."""
    message = found.strip() if isinstance(found, str) else ""
    if len(message.encode()) > _MESSAGE_BYTES or "\n" in message:
        message = ""
    if not message and validation.get("message"):
        message = str(validation["message"]).strip()
    return message or f"failed expression: {str(validation['expression']).strip()}"
