"""JSON and time on the wire, with Go's semantics: kube-apiserver decodes numbers, encodes
strings and formats timestamps the way encoding/json and metav1.Time do, and a client that
round-trips an object through this server must see exactly what it would see from a real one."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any, Final, TypeVar, cast

__all__ = [
    "MICRO_LAYOUT",
    "SERVER_CLOCK",
    "TIME_LAYOUT",
    "Clock",
    "Float64Integer",
    "clone",
    "decode_json",
    "encode_json",
    "format_micro_time",
    "format_time",
    "now",
    "parse_rfc3339",
]

T = TypeVar("T")
TIME_LAYOUT: Final = "2006-01-02T15:04:05Z07:00"
MICRO_LAYOUT: Final = "2006-01-02T15:04:05.000000Z07:00"
_INT64 = (-(2**63), 2**63 - 1)
_JSON_INTEGER = 2**53 - 1  # swag.IsFloat64AJSONInteger: the float64s that are integers
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")
_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$"
)


class Float64Integer(int):
    """A float64 without a fraction beyond 2^53 (an integer literal out of int64 range, or
    `1e17`): Go prints it as an integer below 1e21, so it is one here when printed, but schema
    validation sees a number that is no JSON integer (kube-openapi's type validator)."""


def _number(text: str) -> int | float:
    """An unstructured object holds int64 when the literal is one, float64 otherwise; a float
    that Go prints without a fraction is kept as an int so that it prints the same here."""
    try:
        value = int(text)
    except ValueError:
        as_float = float(text)
    else:
        if _INT64[0] <= value <= _INT64[1]:
            return value
        as_float = float(value)
    if as_float.is_integer() and abs(as_float) <= _JSON_INTEGER:
        return int(as_float)
    if as_float.is_integer() and abs(as_float) < 1e21:
        return Float64Integer(as_float)
    return as_float


def _no_constant(text: str) -> Any:
    raise ValueError(f"invalid character {text[0]!r} looking for beginning of value")


def clone(value: T) -> T:
    """A deep copy of a JSON value (dicts, lists and immutable leaves), as the store hands out
    and keeps its objects: four times as fast as `copy.deepcopy`, which memoises every node."""
    return cast(T, _clone(value))


def _clone(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _clone(item) for key, item in value.items()}
    if kind is list:
        return [_clone(item) for item in value]
    return value


def decode_json(data: bytes | str) -> Any:
    """Raises ValueError (with the parser's reason) on anything encoding/json would reject.

    Like encoding/json (and sigs.k8s.io/json, which kube-apiserver decodes objects with),
    invalid UTF-8 and lone UTF-16 surrogates (`"\\ud800"`) are no error: each becomes U+FFFD.
    """
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    value = json.loads(text, parse_int=_number, parse_float=_number, parse_constant=_no_constant)
    return _without_surrogates(value) if _SURROGATE_ESCAPE.search(text) else value


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def encode_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """Compact, UTF-8, HTML characters escaped and a trailing newline, as json.Encoder does;
    `sort_keys` for unstructured objects, whose maps Go marshals in key order."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    for char, escape in (
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("&", "\\u0026"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(char, escape)
    return (text + "\n").encode("utf-8")


Clock = Callable[[], datetime]
# The clock of the server answering on this thread (`APIServer(clock=...)`): every time it
# stamps — creationTimestamp, deletionTimestamp, a Table's ages, the `Date` header — is its.
SERVER_CLOCK: ContextVar[Clock | None] = ContextVar("kubesim_clock", default=None)


def now() -> datetime:
    clock = SERVER_CLOCK.get()
    return clock() if clock is not None else datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """metav1.Time: RFC 3339 in UTC, whole seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def format_micro_time(moment: datetime) -> str:
    """metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str, *, micro: bool = False) -> datetime:
    """Go's `time.Parse(time.RFC3339, ...)`, or with `micro` the exact-six-digit layout of
    metav1.MicroTime; raises ValueError with Go's wording of the failure."""
    layout = MICRO_LAYOUT if micro else TIME_LAYOUT
    match = _RFC3339.match(text)
    fraction = match.group(7) if match else None
    if match is None or (micro and (fraction is None or len(fraction) != 7)):
        raise ValueError(
            f'parsing time "{text}" as "{layout}": cannot parse "{text}" as "{layout}"'
        )
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    zone = match.group(8)
    try:
        offset = (
            0
            if zone == "Z"
            else (int(zone[1:3]) * 60 + int(zone[4:6])) * (-1 if zone[0] == "-" else 1)
        )
        micros = int((fraction or ".0")[1:7].ljust(6, "0"))
        moment = datetime(year, month, day, hour, minute, second, micros, tzinfo=UTC)
    except ValueError as exc:
        raise ValueError(f'parsing time "{text}": {exc}') from None
    return moment - timedelta(minutes=offset)
