"""CEL's standard library as cel-go runs it (the functions kubesim's environment declares:
operators, size, contains/startsWith/endsWith/matches, conversions, timestamps and durations),
over plain Python values: None, bool, int (CEL int), UInt, float, str, bytes, lists, dicts,
datetime and timedelta. An error is raised as CelError in cel-go's words. `call_cost` is
cel-go's runtime cost of a call (interpreter/runtimecost.go: a string's traversal costs a tenth
of its length), known from the arguments, so the evaluator charges it before the call builds
anything."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import lru_cache
from typing import Any, Final
from zoneinfo import ZoneInfo

from kubesim.cel_ast import UInt

__all__ = ["CelError", "CelType", "call_cost", "equal", "size", "type_of"]

_INT_MIN: Final = -(1 << 63)
_INT_MAX: Final = (1 << 63) - 1
_UINT_MAX: Final = (1 << 64) - 1
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


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


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def size(value: Any) -> int:
    """cel-go's actualSize: a string's code points, a collection's length, else 1."""
    if isinstance(value, str | bytes | Sequence | Mapping) and not isinstance(value, CelType):
        return len(value)
    return 1


def _traversal(n: int) -> int:
    return math.ceil(n * 0.1)


def call_cost(function: str, args: Sequence[Any]) -> int:  # noqa: PLR0911
    """cel-go's CostTracker.costCall for the overload these arguments dispatch to."""
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


# --- equality and order ----------------------------------------------------------------------


def equal(a: Any, b: Any) -> bool:
    """CEL's heterogeneous equality: numbers by value across int, uint and double; values of
    different types are unequal (never an error)."""
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, bool) or isinstance(b, bool) or type_of(a) != type_of(b):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, Mapping):
        return len(a) == len(b) and all(k in b and equal(v, b[k]) for k, v in a.items())
    if isinstance(a, Sequence) and not isinstance(a, str | bytes):
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _order(a: Any, b: Any) -> int:
    if _is_number(a) and _is_number(b):
        if (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
            raise CelError("NaN values cannot be ordered")
        return int(a > b) - int(a < b)
    kinds = (bool, str, bytes, datetime, timedelta)
    if any(isinstance(a, k) and isinstance(b, k) for k in kinds):
        return int(a > b) - int(a < b)
    raise CelError("no such overload")


# --- arithmetic ------------------------------------------------------------------------------


def _checked(value: int, unsigned: bool) -> int:
    if unsigned:
        if not 0 <= value <= _UINT_MAX:
            raise CelError("unsigned integer overflow")
        return UInt(value)
    if not _INT_MIN <= value <= _INT_MAX:
        raise CelError("integer overflow")
    return value


def _arith(op: str, a: Any, b: Any) -> Any:  # noqa: PLR0911, PLR0912
    same = type_of(a) == type_of(b)
    if same and isinstance(a, int) and not isinstance(a, bool):
        unsigned = isinstance(a, UInt)
        if op in "/%" and b == 0:
            raise CelError("division by zero" if op == "/" else "modulus by zero")
        if op == "/":
            return _checked(_trunc_div(a, b), unsigned)
        if op == "%":
            return _checked(a - b * _trunc_div(a, b), unsigned)
        return _checked({"+": a + b, "-": a - b, "*": a * b}[op], unsigned)
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


# --- conversions -----------------------------------------------------------------------------


def _go_float(value: float) -> str:
    """Go's strconv.FormatFloat(f, 'g', -1, 64), as cel-go's string(double) writes it: the
    shortest digits, with an exponent below 1e-4 and from 1e+06 on."""
    if math.isinf(value) or math.isnan(value):
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    exp = len(digits) + exponent - 1
    text = "".join(map(str, digits))
    if exp < -4 or exp >= 6:
        mantissa = text[0] + (f".{text[1:]}" if len(text) > 1 else "")
        return f"{'-' if sign else ''}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    return format(Decimal(repr(value)).normalize(), "f")


def _duration_text(d: timedelta) -> str:
    micros = (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds
    seconds, frac = divmod(abs(micros), 1_000_000)
    sign = "-" if micros < 0 else ""
    return f"{sign}{seconds}{f'.{frac:06d}'.rstrip('0') if frac else ''}s"


_UNITS: Final = {"h": 3600e6, "m": 60e6, "s": 1e6, "ms": 1e3, "us": 1.0, "µs": 1.0, "ns": 1e-3}


def _parse_duration(text: str) -> timedelta:
    match = re.fullmatch(r"([-+]?)((?:\d*\.?\d+(?:h|m|s|ms|us|µs|ns))+|0)", text)
    if not match:
        raise CelError(f'time: invalid duration "{text}"')
    micros = sum(float(n) * _UNITS[u] for n, u in re.findall(r"(\d*\.?\d+)(ms|us|µs|ns|h|m|s)",
                                                            match[2]))  # fmt: skip
    return timedelta(microseconds=-micros if match[1] == "-" else micros)


def _parse_timestamp(text: str) -> datetime:
    try:
        stamp = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        raise CelError(
            f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse'
        ) from None
    if stamp.tzinfo is None or "T" not in text.upper():
        raise CelError(f'parsing time "{text}" as "2006-01-02T15:04:05Z07:00": cannot parse')
    return stamp.astimezone(UTC)


def _to_int(v: Any, unsigned: bool) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float | str | datetime):
        raise CelError("no such overload")
    if isinstance(v, str):
        try:
            v = int(v, 10)
        except ValueError:
            raise CelError(f'strconv.Parse{"Uint" if unsigned else "Int"}: parsing "{v}": '
                           "invalid syntax") from None  # fmt: skip
    elif isinstance(v, float):
        if math.isnan(v) or not (0 if unsigned else _INT_MIN) <= v < (2**64 if unsigned else 2**63):
            raise CelError("unsigned integer overflow" if unsigned else "integer overflow")
        v = int(v)
    elif isinstance(v, datetime):
        v = int((v - _EPOCH).total_seconds() // 1)
    return _checked(v, unsigned)


def _to_string(v: Any) -> str:  # noqa: PLR0911
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(int(v))
    if isinstance(v, float):
        return _go_float(v)
    if isinstance(v, bytes):
        try:
            return v.decode()
        except UnicodeDecodeError:
            raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None
    if isinstance(v, datetime):
        return v.astimezone(UTC).isoformat().replace("+00:00", "Z")
    if isinstance(v, timedelta):
        return _duration_text(v)
    raise CelError("no such overload")


def _to_double(v: Any) -> float:
    if isinstance(v, str):
        try:
            return float(v)
        except ValueError:
            raise CelError(f'strconv.ParseFloat: parsing "{v}": invalid syntax') from None
    if _is_number(v):
        return float(v)
    raise CelError("no such overload")


def _to_bool(v: Any) -> bool:
    if isinstance(v, bool):
        return v
    words = {
        "1": True,
        "t": True,
        "T": True,
        "TRUE": True,
        "true": True,
        "True": True,
        "0": False,
        "f": False,
        "F": False,
        "FALSE": False,
        "false": False,
        "False": False,
    }
    if isinstance(v, str) and v in words:
        return words[v]
    raise CelError(f'strconv.ParseBool: parsing "{v}": invalid syntax' if isinstance(v, str)
                   else "no such overload")  # fmt: skip


def _convert(name: str, v: Any) -> Any:  # noqa: PLR0911
    if name == "dyn":
        return v
    if name == "type":
        return type_of(v)
    if name in ("int", "uint"):
        return _to_int(v, name == "uint")
    if name == "double":
        return _to_double(v)
    if name == "string":
        return _to_string(v)
    if name == "bool":
        return _to_bool(v)
    if name == "bytes" and isinstance(v, bytes | str):
        return v.encode() if isinstance(v, str) else v
    if name == "timestamp" and isinstance(v, str | int | datetime):
        if isinstance(v, datetime):
            return v
        return _EPOCH + timedelta(seconds=v) if isinstance(v, int) else _parse_timestamp(v)
    if name == "duration" and isinstance(v, str | timedelta):
        return v if isinstance(v, timedelta) else _parse_duration(v)
    raise CelError("no such overload")


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


_GETTERS: Final[dict[str, Callable[[datetime], int]]] = {
    "getFullYear": lambda t: t.year, "getMonth": lambda t: t.month - 1,
    "getDate": lambda t: t.day, "getDayOfMonth": lambda t: t.day - 1,
    "getDayOfWeek": lambda t: (t.weekday() + 1) % 7,
    "getDayOfYear": lambda t: t.timetuple().tm_yday - 1, "getHours": lambda t: t.hour,
    "getMinutes": lambda t: t.minute, "getSeconds": lambda t: t.second,
    "getMilliseconds": lambda t: t.microsecond // 1000,
}  # fmt: skip
_DURATION_GETTERS: Final = {"getHours": 3600e6, "getMinutes": 60e6, "getSeconds": 1e6,
                            "getMilliseconds": 1e3}  # fmt: skip


def _time_get(name: str, args: Sequence[Any]) -> int:
    value = args[0]
    if isinstance(value, timedelta) and name in _DURATION_GETTERS and len(args) == 1:
        return int(value / timedelta(microseconds=_DURATION_GETTERS[name]))
    if not isinstance(value, datetime):
        raise CelError("no such overload")
    if len(args) == 2:
        zone = str(args[1])
        offset = re.fullmatch(r"([+-])(\d\d):(\d\d)", zone)
        try:
            value = value.astimezone(ZoneInfo(zone) if not offset else None) if not offset else (
                value + (1 if offset[1] == "+" else -1)
                * timedelta(hours=int(offset[2]), minutes=int(offset[3])))  # fmt: skip
        except (ValueError, KeyError):
            raise CelError(f"unknown time zone {zone}") from None
    return _GETTERS[name](value)


def call(function: str, args: Sequence[Any]) -> Any:  # noqa: PLR0911, PLR0912
    """The function's value for these (evaluated) arguments."""
    if function in ("_+_", "_-_", "_*_", "_/_", "_%_"):
        return _arith(function[1], args[0], args[1])
    if function in ("_==_", "_!=_"):
        return equal(args[0], args[1]) is (function == "_==_")
    if function in ("_<_", "_<=_", "_>_", "_>=_"):
        order = _order(args[0], args[1])
        return {"_<_": order < 0, "_<=_": order <= 0, "_>_": order > 0, "_>=_": order >= 0}[
            function
        ]
    if function == "-_":
        value = args[0]
        if isinstance(value, float):
            return -value
        if isinstance(value, timedelta):
            return -value
        if isinstance(value, int) and not isinstance(value, bool | UInt):
            return _checked(-value, False)
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
    if function in _GETTERS:
        return _time_get(function, args)
    if function in ("dyn", "type", "int", "uint", "double", "string", "bool", "bytes",
                    "timestamp", "duration"):  # fmt: skip
        return _convert(function, args[0])
    raise CelError(f"no such overload: {function}")
