"""Field errors and Go's way of printing values: `field.Error` of apimachinery (the causes of a
422) and the `%q` / `%v` / `%#v` formatting kube-apiserver's messages are made of."""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = ["OMIT", "FieldError", "FieldErrorType", "GoLiteral", "go_quote", "go_value"]


class FieldErrorType(enum.Enum):
    """(cause reason, the words kube-apiserver puts in front of the detail)."""

    NOT_FOUND = ("FieldValueNotFound", "Not found")
    REQUIRED = ("FieldValueRequired", "Required value")
    DUPLICATE = ("FieldValueDuplicate", "Duplicate value")
    INVALID = ("FieldValueInvalid", "Invalid value")
    NOT_SUPPORTED = ("FieldValueNotSupported", "Unsupported value")
    FORBIDDEN = ("FieldValueForbidden", "Forbidden")
    TOO_LONG = ("FieldValueTooLong", "Too long")
    TOO_MANY = ("FieldValueTooMany", "Too many")
    TYPE_INVALID = ("FieldValueTypeInvalid", "Invalid value")

    @property
    def reason(self) -> str:
        return self.value[0]

    @property
    def words(self) -> str:
        return self.value[1]


class GoLiteral:
    """A bad value that Go prints with `%#v` as a bare literal (an uint64 resourceVersion
    prints as `0x0`)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


class _Omitted:
    def __repr__(self) -> str:
        return "<value omitted>"


OMIT: Final = _Omitted()
_VALUELESS = (FieldErrorType.REQUIRED, FieldErrorType.FORBIDDEN, FieldErrorType.TOO_LONG)


@dataclass(frozen=True, slots=True)
class FieldError:
    type: FieldErrorType
    field: str
    value: object = OMIT
    detail: str = ""

    def body(self) -> str:
        """`field.Error.ErrorBody()`: the cause message, without the field path."""
        if self.type in _VALUELESS or self.value is OMIT:
            text = self.type.words
        else:
            text = f"{self.type.words}: {go_value(self.value)}"
        return f"{text}: {self.detail}" if self.detail else text

    def __str__(self) -> str:
        return f"{self.field}: {self.body()}"

    @classmethod
    def required(cls, path: str, detail: str = "") -> FieldError:
        return cls(FieldErrorType.REQUIRED, path, OMIT, detail)

    @classmethod
    def invalid(cls, path: str, value: object, detail: str) -> FieldError:
        return cls(FieldErrorType.INVALID, path, value, detail)

    @classmethod
    def type_invalid(cls, path: str, value: object, detail: str) -> FieldError:
        return cls(FieldErrorType.TYPE_INVALID, path, value, detail)

    @classmethod
    def forbidden(cls, path: str, detail: str) -> FieldError:
        return cls(FieldErrorType.FORBIDDEN, path, OMIT, detail)

    @classmethod
    def duplicate(cls, path: str, value: object) -> FieldError:
        return cls(FieldErrorType.DUPLICATE, path, value)

    @classmethod
    def not_supported(cls, path: str, value: object, supported: Iterable[object]) -> FieldError:
        quoted = ", ".join(go_quote(v if isinstance(v, str) else json.dumps(v)) for v in supported)
        return cls(FieldErrorType.NOT_SUPPORTED, path, value, f"supported values: {quoted}")

    @classmethod
    def too_long(cls, path: str, max_length: int) -> FieldError:
        unit = "byte" if max_length == 1 else "bytes"
        return cls(FieldErrorType.TOO_LONG, path, OMIT, f"may not be more than {max_length} {unit}")

    @classmethod
    def too_many(cls, path: str, actual: int, maximum: int) -> FieldError:
        unit = "item" if maximum == 1 else "items"
        return cls(FieldErrorType.TOO_MANY, path, actual, f"must have at most {maximum} {unit}")


def go_quote(text: str) -> str:
    """Go's `%q` / `strconv.Quote`, because kube-apiserver quotes names and values with it."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        elif code < 0x80:
            out.append(f"\\x{code:02x}")
        elif code < 0x10000:
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_GO_ESCAPES: Final = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
}


def go_value(value: object) -> str:
    """How `field.Error` prints a bad value: `%q` for strings, `%v` for simple types, `%#v`
    for the rest (maps as `map[string]interface {}{...}`)."""
    if value is None or isinstance(value, bool):
        return {None: "null", True: "true", False: "false"}[value]
    if isinstance(value, int | float):
        return _go_float(float(value)) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, Mapping):
        inner = ", ".join(f"{go_quote(str(k))}:{_go_sharp(v)}" for k, v in sorted(value.items()))
        return "map[string]interface {}{" + inner + "}"
    if isinstance(value, list):
        return "[]interface {}{" + ", ".join(_go_sharp(v) for v in value) + "}"
    return str(value)


def _go_sharp(value: object) -> str:
    if isinstance(value, str):
        return go_quote(value)
    return go_value(value)


def _go_float(value: float) -> str:
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa}e{sign}{exponent.lstrip('+-').zfill(2)}"
    return text
