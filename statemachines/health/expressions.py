"""CEL expressions of the `cel` rule (Flux RFC-0009), compiled and type-checked once at load.

As in Flux, the object's top-level fields are the variables: `metadata`, `spec` and `status`
(maps of any value), `apiVersion` and `kind` (strings); besides, as in Kubernetes' own CEL,
`self` is the whole object, so that `has(self.status)` can guard an object its controller has
not written a status on yet (`has(status)` is not CEL) and other top-level fields (a
ConfigMap's `data`) can be read. Compiling also type-checks, as cel-go does in Kubernetes, so a
misspelt function or variable, or an expression that cannot be a boolean, is a load-time error
rather than an `EvaluationError` at the first object change.
The runtime is `cel-expr-python`, the CEL project's own (see the README, "Health rules").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from statemachines.size import cut

__all__ = ["ITERATION_BUDGET", "EvaluationFailed", "Expression", "Variables"]

_MAPS = ("metadata", "spec", "status")
_STATUS_CODE = re.compile(r"^[A-Z_]+: ")
_STRINGS = ("apiVersion", "kind")
_SELF = "self"


# `cel_expr_python` is imported by the functions that use it, not here: a configuration
# without resources (and `addon-status simulate`) never pays for loading it.


@cache
def _environment() -> Any:
    from cel_expr_python import cel

    any_map = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
    variables = {name: any_map for name in (*_MAPS, _SELF)}
    variables |= {name: cel.Type.STRING for name in _STRINGS}
    return cel.NewEnv(variables=variables)


class EvaluationFailed(Exception):  # noqa: N818 -- a result of the rule, not a bug
    """An expression that failed on this object (a missing field, a wrong type): the `cel`
    rule turns it into `Unhealthy` / `EvaluationError` with this message."""


@dataclass(frozen=True, slots=True)
class Variables:
    """One object bound to the expressions' variables, made once per object change and shared
    by its (up to three) expressions."""

    activation: Any

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Variables:
        """Binding converts nothing yet: a value the runtime cannot take fails in `holds`."""
        bound = {name: obj[name] for name in (*_MAPS, *_STRINGS) if name in obj}
        return cls(_environment().Activation(data={**bound, _SELF: obj}))


@dataclass(frozen=True, slots=True)
class Expression:
    """An expression as written in the configuration and its checked program."""

    text: str
    program: Any = field(compare=False, repr=False)

    @classmethod
    def compile(cls, text: object) -> Expression:
        """Raises ValueError naming the expression and what is wrong with it."""
        if isinstance(text, Expression):
            return text
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"a CEL expression must be a non-empty string, not {text!r}")
        try:
            program = _environment().compile(text)
        except RuntimeError as error:
            raise ValueError(
                f"CEL {cut(text, 120)!r} does not compile: {cut(_first_error(error), 300)}"
            ) from error
        from cel_expr_python import cel

        returns = program.return_type()
        if returns not in (cel.Type.BOOL, cel.Type.DYN):
            raise ValueError(
                f"CEL {cut(text, 120)!r} is not a condition: it returns"
                f" {returns.name().lower()}, not bool"
            )
        return cls(text, program)

    def holds(self, variables: Variables) -> bool:
        """The expression's value; raises EvaluationFailed when it has none or is not a bool."""
        try:
            value = self.program.eval(variables.activation)
        except Exception as error:  # the runtime's own failure must not wedge the worker
            raise EvaluationFailed(_explained(_plain(str(error)))) from error
        from cel_expr_python import cel

        if value.type() == cel.Type.ERROR:
            raise EvaluationFailed(_plain(str(value.value())))
        result = value.value()
        if not isinstance(result, bool):
            raise EvaluationFailed(f"returned {value.type().name().lower()}, not bool")
        return result


ITERATION_BUDGET = 10_000  # cel-cpp's, per evaluation; the binding offers no way to raise it


def _explained(message: str) -> str:
    """The runtime's words, with the limit named where it hit one."""
    if "Iteration budget exceeded" in message:
        return (
            f"{message}: CEL evaluates at most {ITERATION_BUDGET:,} iterations of its macros per"
            " expression (exists, all, filter, map over every list it walks)"
        )
    return message


def _first_error(error: RuntimeError) -> str:
    """The first error cel-cpp reports, without its status code or the caret lines."""
    first = _plain(str(error)).splitlines()[0].removeprefix("ERROR: ")
    return first.replace("<input>:", "at ", 1)


def _plain(message: str) -> str:
    """`NOT_FOUND: Key not found in map : "x"` -> `Key not found in map : "x"`."""
    return _STATUS_CODE.sub("", message, count=1)
