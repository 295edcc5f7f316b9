"""Go structs as JSON: the decoding (type errors, unknown fields dropped) and the encoding
(omitempty, zero values, timestamps) of kube-apiserver's built-in types, described as data so
that a built-in object leaves this server in exactly the shape the typed client validates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubesim.codec import format_micro_time, format_time, parse_rfc3339

__all__ = ["Field", "GoType", "ListOf", "MapOf", "Scalar", "Struct", "TypedDecodeError", "decode"]


@dataclass(frozen=True, slots=True)
class Scalar:
    go: str  # string, int32, int64, bool, Time, MicroTime


@dataclass(frozen=True, slots=True)
class MapOf:
    value: GoType


@dataclass(frozen=True, slots=True)
class ListOf:
    item: GoType


@dataclass(frozen=True, slots=True)
class Field:
    json: str
    type: GoType
    omitempty: bool = True
    pointer: bool = False


@dataclass(frozen=True, slots=True)
class Struct:
    name: str
    fields: tuple[Field, ...]


GoType = Scalar | Struct | MapOf | ListOf

_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}


class TypedDecodeError(ValueError):
    """The body does not fit the Go type: kube-apiserver answers 400, not 422."""


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _go_name(kind: GoType) -> str:
    if isinstance(kind, Scalar):
        return {"Time": "v1.Time", "MicroTime": "v1.MicroTime"}.get(kind.go, kind.go)
    if isinstance(kind, Struct):
        return f"v1.{kind.name}"
    if isinstance(kind, MapOf):
        return f"map[string]{_go_name(kind.value)}"
    return f"[]{_go_name(kind.item)}"


def _is_zero(value: Any) -> bool:
    return value in ("", 0, False) or value in ([], {})


def decode(raw: Any, kind: Struct, path: str, pruned: list[str]) -> dict[str, Any]:
    """The Go-marshalled form of `raw` decoded into `kind`; unknown fields are appended to
    `pruned`; a value of the wrong type raises TypedDecodeError with encoding/json's words."""
    if not isinstance(raw, dict):
        raise TypedDecodeError(
            f"json: cannot unmarshal {_json_kind(raw)} into Go struct field "
            f".{path} of type v1.{kind.name}"
        )
    out: dict[str, Any] = {}
    known = {field.json for field in kind.fields}
    pruned.extend(f"{path}.{key}" if path else key for key in raw if key not in known)
    for field in kind.fields:
        where = f"{path}.{field.json}" if path else field.json
        value = raw.get(field.json)
        if value is None:
            zero = _zero(field)
            if zero is not _ABSENT:
                out[field.json] = zero
            continue
        decoded = _value(value, field.type, where, kind.name, pruned)
        if field.pointer or not field.omitempty or not _is_zero(decoded):
            out[field.json] = decoded
    return out


class _Absent:
    pass


_ABSENT = _Absent()


def _zero(field: Field) -> Any:
    """What encoding/json writes for an unset field."""
    if field.pointer:
        return _ABSENT
    if isinstance(field.type, Struct):
        return decode({}, field.type, "", [])
    if isinstance(field.type, Scalar) and field.type.go in ("Time", "MicroTime"):
        return None  # a zero metav1.Time marshals as null even with omitempty
    if field.omitempty:
        return _ABSENT
    if isinstance(field.type, Scalar):
        return {"string": "", "bool": False}.get(field.type.go, 0)
    return None  # a nil slice or map without omitempty


def _value(value: Any, kind: GoType, where: str, struct: str, pruned: list[str]) -> Any:
    def mismatch() -> TypedDecodeError:
        return TypedDecodeError(
            f"json: cannot unmarshal {_json_kind(value)} into Go struct field "
            f"{struct}.{where} of type {_go_name(kind)}"
        )

    if isinstance(kind, Struct):
        if not isinstance(value, dict):  # encoding/json names the struct that holds the field
            raise mismatch()
        return decode(value, kind, where, pruned)
    if isinstance(kind, MapOf):
        if not isinstance(value, dict):
            raise mismatch()
        return {k: _value(v, kind.value, where, struct, pruned) for k, v in value.items()}
    if isinstance(kind, ListOf):
        if not isinstance(value, list):
            raise mismatch()
        return [_value(v, kind.item, where, struct, pruned) for v in value]
    if not _scalar_fits(value, kind.go):
        raise mismatch()
    if kind.go not in ("Time", "MicroTime"):
        return value
    try:
        return (
            format_micro_time(parse_rfc3339(value, micro=True))
            if kind.go == "MicroTime"
            else format_time(parse_rfc3339(value))
        )
    except ValueError as exc:
        raise TypedDecodeError(str(exc)) from None


def _scalar_fits(value: Any, go: str) -> bool:
    if go in _RANGES:
        low, high = _RANGES[go]
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high
    if go == "bool":
        return isinstance(value, bool)
    return isinstance(value, str)  # string, Time and MicroTime
