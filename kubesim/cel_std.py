"""CEL's standard library as cel-go runs it (the functions kubesim's environment declares:
operators, size, contains/startsWith/endsWith/matches, conversions, timestamps and durations),
over the values of cel_values.py. `call_cost` is cel-go's runtime cost of a call
(interpreter/runtimecost.go: a string's traversal costs a tenth of its length), known from the
arguments, so the evaluator charges it before the call builds anything."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any, Final

from kubesim.cel_ast import UInt
from kubesim.cel_convert import CONVERSIONS, GETTERS, convert, time_get
from kubesim.cel_values import CelError, CelType, checked, equal, order, size, type_of

__all__ = ["call", "call_cost"]


def _traversal(n: int) -> int:
    return math.ceil(n * 0.1)


_SIZED: Final = frozenset({"startsWith", "endsWith", "string", "bytes", "@in", "_<_",
                           "_<=_", "_>_", "_>=_", "_==_", "_!=_", "_+_", "matches",
                           "contains"})  # fmt: skip


def call_cost(function: str, args: Sequence[Any]) -> int:  # noqa: PLR0911
    """cel-go's CostTracker.costCall for the overload these arguments dispatch to."""
    if function not in _SIZED or not any(isinstance(a, str | bytes | Sequence | Mapping)
                                         for a in args):  # fmt: skip
        return 1  # what cel-go charges any other call, or one of scalars
    if function in ("startsWith", "endsWith") or (
        function in ("string", "bytes") and isinstance(args[0], str | bytes)
    ):
        return _traversal(size(args[0]))
    if function == "@in" and isinstance(args[1], Sequence) and not isinstance(args[1], str):
        return size(args[1])
    text = all(isinstance(a, str | bytes) for a in args)
    if function in ("_<_", "_<=_", "_>_", "_>=_") and text:
        return _traversal(min(size(args[0]), size(args[1])))
    if function in ("_==_", "_!=_"):
        return _traversal(min(size(args[0]), size(args[1])))
    if function == "_+_" and text:
        return _traversal(size(args[0]) + size(args[1]))
    if function == "matches" and text:
        return math.ceil((1 + size(args[0])) * 0.1) * math.ceil(size(args[1]) * 0.25)
    if function == "contains" and text:
        return _traversal(size(args[0])) * _traversal(size(args[1]))
    return 1


# --- arithmetic ------------------------------------------------------------------------------


def _arith(op: str, a: Any, b: Any) -> Any:  # noqa: PLR0911, PLR0912
    same = type_of(a) == type_of(b)
    if same and isinstance(a, int) and not isinstance(a, bool):
        unsigned = isinstance(a, UInt)
        if op in "/%" and b == 0:
            raise CelError("division by zero" if op == "/" else "modulus by zero")
        if op == "/":
            return checked(_trunc_div(a, b), unsigned)
        if op == "%":
            return checked(a - b * _trunc_div(a, b), unsigned)
        return checked({"+": a + b, "-": a - b, "*": a * b}[op], unsigned)
    if same and isinstance(a, float):
        if op == "/":
            return a / b if b else math.copysign(math.inf, a) if a else math.nan
        if op == "%":
            raise CelError("no such overload")
        return {"+": a + b, "-": a - b, "*": a * b}[op]
    if op == "+":
        if same and isinstance(a, str | bytes):
            return a + b
        if isinstance(a, datetime | timedelta) and isinstance(b, timedelta):
            return a + b
        if isinstance(a, timedelta) and isinstance(b, datetime):
            return b + a
    if op == "-" and isinstance(a, datetime | timedelta) and isinstance(b, timedelta):
        return a - b
    if op == "-" and isinstance(a, datetime) and isinstance(b, datetime):
        return a - b
    raise CelError("no such overload")


def _trunc_div(a: int, b: int) -> int:
    return abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)


# --- strings, regular expressions, time ------------------------------------------------------


@lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    import re2

    try:
        return re2.compile(pattern)
    except re2.error as error:
        raise CelError(f"error parsing regexp: {error}") from None


def _text_op(name: str, a: Any, b: Any) -> bool:
    if not (isinstance(a, str) and isinstance(b, str)):
        raise CelError("no such overload")
    if name == "matches":
        return _regex(b).search(a) is not None
    return {"contains": b in a, "startsWith": a.startswith(b), "endsWith": a.endswith(b)}[name]


def call(function: str, args: Sequence[Any]) -> Any:  # noqa: PLR0911, PLR0912
    """The function's value for these (evaluated) arguments."""
    if function in ("_+_", "_-_", "_*_", "_/_", "_%_"):
        return _arith(function[1], args[0], args[1])
    if function in ("_==_", "_!=_"):
        return equal(args[0], args[1]) is (function == "_==_")
    if function in ("_<_", "_<=_", "_>_", "_>=_"):
        sign = order(args[0], args[1])
        return {"_<_": sign < 0, "_<=_": sign <= 0, "_>_": sign > 0, "_>=_": sign >= 0}[function]
    if function == "-_":
        value = args[0]
        if isinstance(value, float):
            return -value
        if isinstance(value, timedelta):
            return -value
        if isinstance(value, int) and not isinstance(value, bool | UInt):
            return checked(-value, False)
        raise CelError("no such overload")
    if function == "!_":
        if isinstance(args[0], bool):
            return not args[0]
        raise CelError("no such overload")
    if function == "@in":
        container = args[1]
        if isinstance(container, Mapping):
            return any(equal(args[0], k) for k in container) if not isinstance(
                args[0], str) else args[0] in container  # fmt: skip
        if isinstance(container, Sequence) and not isinstance(container, str | bytes):
            return any(equal(args[0], e) for e in container)
        raise CelError("no such overload")
    if function == "size":
        if isinstance(args[0], str | bytes | Sequence | Mapping) and not isinstance(
            args[0], CelType
        ):
            return len(args[0])
        raise CelError("no such overload")
    if function in ("contains", "startsWith", "endsWith", "matches"):
        return _text_op(function, args[0], args[1])
    if function in GETTERS:
        return time_get(function, args)
    if function in CONVERSIONS:
        return convert(function, args[0])
    raise CelError(f"no such overload: {function}")
