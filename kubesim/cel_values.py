"""CEL's values over plain Python ones, as cel-go treats them: None, bool, int (CEL's int),
UInt, float, str, bytes, lists, dicts, datetime (timestamp), timedelta (duration) and CelType;
their type, their size as cel-go's cost model measures it, CEL's heterogeneous equality and its
order. An error is CelError, in cel-go's words."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from kubesim.cel_ast import UInt

__all__ = ["EPOCH", "INT_MIN", "CelError", "CelType", "checked", "equal", "is_number", "order",
           "size", "type_of"]  # fmt: skip

INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 63) - 1
_UINT_MAX: Final = (1 << 64) - 1
EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class CelError(Exception):
    """An evaluation error: a value in CEL, which `&&`, `||` and `exists` may absorb."""


class CelType(str):
    """A type value (`type(x)`, `int`): its name."""

    __slots__ = ()


def type_of(value: Any) -> CelType:
    if value is None:
        return CelType("null_type")
    if isinstance(value, bool):
        return CelType("bool")
    if isinstance(value, UInt):
        return CelType("uint")
    if isinstance(value, int):
        return CelType("int")
    if isinstance(value, CelType):
        return CelType("type")
    for kind, name in ((float, "double"), (str, "string"), (bytes, "bytes"),
                       (Mapping, "map"), (datetime, "google.protobuf.Timestamp"),
                       (timedelta, "google.protobuf.Duration"), (Sequence, "list")):  # fmt: skip
        if isinstance(value, kind):
            return CelType(name)
    raise CelError("no such overload")


def is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def size(value: Any) -> int:
    """cel-go's actualSize: a string's code points, a collection's length, else 1."""
    if isinstance(value, str | bytes | Sequence | Mapping) and not isinstance(value, CelType):
        return len(value)
    return 1


# --- equality and order ----------------------------------------------------------------------


def equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: numbers by value across int, uint and double; values of
    different types are unequal (never an error)."""
    if is_number(a) and is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool) or type_of(a) != type_of(b):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping):
        return len(a) == len(b) and all(k in b and equal(v, b[k]) for k, v in a.items())
    if isinstance(a, Sequence) and not isinstance(a, str | bytes):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def order(a: Any, b: Any) -> int:
    if type(a) is int and type(b) is int:  # the common case, first
        return int(a > b) - int(a < b)
    if is_number(a) and is_number(b):
        if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
            raise CelError("NaN values cannot be ordered")
        return int(a > b) - int(a < b)
    kinds = (bool, str, bytes, datetime, timedelta)
    if any(isinstance(a, k) and isinstance(b, k) for k in kinds):
        return int(a > b) - int(a < b)
    raise CelError("no such overload")


def checked(value: int, unsigned: bool) -> int:
    if unsigned:
        if not 0 <= value <= _UINT_MAX:
            raise CelError("unsigned integer overflow")
        return UInt(value)
    if not INT_MIN <= value <= _INT_MAX:
        raise CelError("integer overflow")
    return value
