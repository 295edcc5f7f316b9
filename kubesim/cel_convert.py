"""CEL's conversions (`int()`, `string()`, `timestamp()`...) and the timestamp and duration
accessors, as cel-go words their results and errors: a double is written as Go's
strconv.FormatFloat writes it, a duration as seconds (`1.5s`), a timestamp as RFC 3339."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Final
from zoneinfo import ZoneInfo

from kubesim.cel_values import EPOCH, INT_MIN, CelError, checked, is_number, type_of

__all__ = ["CONVERSIONS", "GETTERS", "convert", "time_get"]

CONVERSIONS: Final = frozenset({"dyn", "type", "int", "uint", "double", "string", "bool",
                                "bytes", "timestamp", "duration"})  # fmt: skip


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
        if math.isnan(v) or not (0 if unsigned else INT_MIN) <= v < (2**64 if unsigned else 2**63):
            raise CelError("unsigned integer overflow" if unsigned else "integer overflow")
        v = int(v)
    elif isinstance(v, datetime):
        v = int((v - EPOCH).total_seconds() // 1)
    return checked(v, unsigned)


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
    if is_number(v):
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


def convert(name: str, v: Any) -> Any:  # noqa: PLR0911
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
        return EPOCH + timedelta(seconds=v) if isinstance(v, int) else _parse_timestamp(v)
    if name == "duration" and isinstance(v, str | timedelta):
        return v if isinstance(v, timedelta) else _parse_duration(v)
    raise CelError("no such overload")


GETTERS: Final[dict[str, Callable[[datetime], int]]] = {
    "getFullYear": lambda t: t.year, "getMonth": lambda t: t.month - 1,
    "getDate": lambda t: t.day, "getDayOfMonth": lambda t: t.day - 1,
    "getDayOfWeek": lambda t: (t.weekday() + 1) % 7,
    "getDayOfYear": lambda t: t.timetuple().tm_yday - 1, "getHours": lambda t: t.hour,
    "getMinutes": lambda t: t.minute, "getSeconds": lambda t: t.second,
    "getMilliseconds": lambda t: t.microsecond // 1000,
}  # fmt: skip
_DURATION_GETTERS: Final = {"getHours": 3600e6, "getMinutes": 60e6, "getSeconds": 1e6,
                            "getMilliseconds": 1e3}  # fmt: skip


def time_get(name: str, args: Sequence[Any]) -> int:
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
    return GETTERS[name](value)
