"""The checked AST of a CEL expression, as cel-expr-python serializes it (a `cel.expr.CheckedExpr`
in an `Any`: cel-spec's checked.proto and syntax.proto), read into plain nodes for
kubesim/cel_eval.py. The checker's reference map gives each call the overload it resolved (one
id, or none where only the runtime types decide) and turns `variables.name` into one
identifier. Lists and maps of constants are folded into constants, as cel-go's `OptOptimize`
(which kube-apiserver enables) folds them: they cost nothing to build."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from kubesim.protobuf import wire_fields

__all__ = ["Call", "Comprehension", "Const", "Ident", "ListLit", "MapLit", "Node", "Select", "read"]


@dataclass(frozen=True, slots=True)
class Const:
    value: Any


@dataclass(frozen=True, slots=True)
class Ident:
    name: str


@dataclass(frozen=True, slots=True)
class Select:
    operand: Node
    field: str
    test_only: bool  # has()


@dataclass(frozen=True, slots=True)
class Call:
    function: str
    args: tuple[Node, ...]  # a member call's target first
    overload: str  # the one overload the checker resolved; "" where the runtime decides


@dataclass(frozen=True, slots=True)
class ListLit:
    elements: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class MapLit:
    entries: tuple[tuple[Node, Node], ...]


@dataclass(frozen=True, slots=True)
class Comprehension:
    iter_var: str
    iter_var2: str
    iter_range: Node
    accu_var: str
    accu_init: Node
    loop_condition: Node
    loop_step: Node
    result: Node


Node = Const | Ident | Select | Call | ListLit | MapLit | Comprehension


class UInt(int):
    """A CEL uint (Python's int is CEL's int)."""

    __slots__ = ()


def read(serialized: bytes) -> Node:
    """The root node of a serialized checked expression."""
    wrapped = _message(serialized)
    checked = _message(_one(wrapped, 2, b""))
    references: dict[int, tuple[str, ...]] = {}
    for entry in checked.get(2, []):
        fields = _message(entry)
        reference = _message(_one(fields, 2, b""))
        overloads = tuple(o.decode() for o in reference.get(3, []))
        references[_one(fields, 1, 0)] = overloads
    return _expr(_one(checked, 4, b""), references)


def _expr(data: bytes, references: dict[int, tuple[str, ...]]) -> Node:  # noqa: PLR0911
    fields = _message(data)
    node_id = _one(fields, 2, 0)

    def sub(raw: bytes) -> Node:
        return _expr(raw, references)

    if 3 in fields:
        return Const(_constant(_message(_one(fields, 3, b""))))
    if 4 in fields:
        return Ident(_text(_message(_one(fields, 4, b"")), 1))
    if 5 in fields:
        select = _message(_one(fields, 5, b""))
        return Select(sub(_one(select, 1, b"")), _text(select, 2), bool(_one(select, 3, 0)))
    if 6 in fields:
        call = _message(_one(fields, 6, b""))
        args = tuple(sub(a) for a in ([call[1][0]] if 1 in call else []) + call.get(3, []))
        overloads = references.get(node_id, ())
        return Call(_text(call, 2), args, overloads[0] if len(overloads) == 1 else "")
    if 7 in fields:
        elements = tuple(sub(e) for e in _message(_one(fields, 7, b"")).get(1, []))
        if all(isinstance(e, Const) for e in elements):
            return Const([e.value for e in elements])  # type: ignore[union-attr]
        return ListLit(elements)
    if 8 in fields:
        entries = []
        for raw in _message(_one(fields, 8, b"")).get(2, []):
            entry = _message(raw)
            entries.append((sub(_one(entry, 3, b"")), sub(_one(entry, 4, b""))))
        if all(isinstance(k, Const) and isinstance(v, Const) for k, v in entries):
            return Const({k.value: v.value for k, v in entries})  # type: ignore[union-attr]
        return MapLit(tuple(entries))
    if 9 in fields:
        c = _message(_one(fields, 9, b""))
        return Comprehension(
            _text(c, 1), _text(c, 8), sub(_one(c, 2, b"")), _text(c, 3), sub(_one(c, 4, b"")),
            sub(_one(c, 5, b"")), sub(_one(c, 6, b"")), sub(_one(c, 7, b"")),
        )  # fmt: skip
    raise ValueError("an expression of a kind CEL does not have")


def _constant(fields: dict[int, list[Any]]) -> Any:  # noqa: PLR0911
    if 1 in fields:
        return None
    if 2 in fields:
        return bool(fields[2][0])
    if 3 in fields:
        value = fields[3][0]
        return value - (1 << 64) if value >= 1 << 63 else value
    if 4 in fields:
        return UInt(fields[4][0])
    if 5 in fields:
        return struct.unpack("<d", fields[5][0])[0]
    if 6 in fields:
        return fields[6][0].decode()
    if 7 in fields:
        return bytes(fields[7][0])
    raise ValueError("a constant of a kind kubesim does not read")


def _one(fields: dict[int, list[Any]], number: int, default: Any) -> Any:
    values = fields.get(number)
    return values[-1] if values else default


def _text(fields: dict[int, list[Any]], number: int) -> str:
    return bytes(_one(fields, number, b"")).decode()


def _message(data: bytes) -> dict[int, list[Any]]:
    fields: dict[int, list[Any]] = {}
    for number, value in wire_fields(data):
        fields.setdefault(number, []).append(value)
    return fields
