"""Label and field selectors of list and watch requests, parsed with kube-apiserver's grammar
and its refusal of field labels a resource does not index."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kubesim.errors import bad_request

__all__ = ["FieldSelector", "LabelSelector", "Selector", "field_at"]

Getter = Callable[[Mapping[str, Any]], str]
_SET_TERM = re.compile(r"^(?P<key>[^\s!=<>]+)\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)$")
_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
)
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    op: str  # =, !=, in, notin, exists, !, gt, lt
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key, "")
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in ("=", "in"):
            return present and value in self.values
        if self.op in ("!=", "notin"):
            return not present or value not in self.values
        try:
            number = int(value)
        except ValueError:
            return False
        bound = int(self.values[0])
        return present and (number > bound if self.op == "gt" else number < bound)


def _split_terms(text: str) -> list[str]:
    terms, depth, current = [], 0, ""
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += char
    terms.append(current)
    return [term.strip() for term in terms]


def _check(key: str, values: tuple[str, ...]) -> None:
    if not _KEY.match(key) or len(key.rsplit("/", maxsplit=1)[-1]) > 63:
        raise bad_request(f"unable to parse requirement: invalid label key {key!r}")
    for value in values:
        if len(value) > 63 or not _VALUE.match(value):
            raise bad_request(f"unable to parse requirement: invalid label value: {value!r}")


class LabelSelector:
    """`labelSelector=`: all requirements must hold (an empty selector matches everything)."""

    def __init__(self, text: str) -> None:
        self._requirements: list[_Requirement] = []
        if text.strip():
            self._requirements = [self._parse(term) for term in _split_terms(text)]

    @staticmethod
    def _parse(term: str) -> _Requirement:
        if not term:
            raise bad_request("unable to parse requirement: found '', expected: identifier")
        found = _SET_TERM.match(term)
        if found:
            values = tuple(v.strip() for v in found["values"].split(",") if v.strip())
            _check(found["key"], values)
            return _Requirement(found["key"], found["op"], values)
        if term.startswith("!"):
            _check(term[1:].strip(), ())
            return _Requirement(term[1:].strip(), "!")
        for op, name in (("!=", "!="), ("==", "="), ("=", "="), (">", "gt"), ("<", "lt")):
            if op in term:
                key, value = (part.strip() for part in term.split(op, 1))
                if name in ("gt", "lt") and not value.lstrip("-").isdigit():
                    raise bad_request(
                        f"unable to parse requirement: for 'gt', 'lt' operators, "
                        f"the value must be an integer: {value!r}"
                    )
                _check(key, () if name in ("gt", "lt") else (value,))
                return _Requirement(key, name, (value,))
        _check(term, ())
        return _Requirement(term, "exists")

    def matches(self, obj: Mapping[str, Any]) -> bool:
        labels = (obj.get("metadata") or {}).get("labels") or {}
        return all(requirement.matches(labels) for requirement in self._requirements)


def _unescape_split(text: str, separator: str) -> list[str]:
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == separator:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


class FieldSelector:
    """`fieldSelector=`: only the field labels the resource indexes are accepted (400 for the
    rest, as kube-apiserver answers "field label not supported")."""

    def __init__(self, text: str, fields: Mapping[str, Getter]) -> None:
        self._terms: list[tuple[Getter, bool, str]] = []
        if not text.strip():
            return
        for term in _unescape_split(text, ","):
            op = next((op for op in ("!=", "==", "=") if op in term), None)
            if op is None:
                raise bad_request(f"invalid selector: '{text}'; can't understand '{term}'")
            key, value = term.split(op, 1)
            negate = op == "!="
            getter = fields.get(key.strip())
            if getter is None:
                raise bad_request(f"field label not supported: {key.strip()}")
            self._terms.append((getter, negate, value))

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return all((getter(obj) == value) != negate for getter, negate, value in self._terms)


class Selector:
    """Both selectors of one request."""

    def __init__(self, labels: str, fields: str, field_labels: Mapping[str, Getter]) -> None:
        self.labels = LabelSelector(labels)
        self.fields = FieldSelector(fields, field_labels)
        self.empty = not labels.strip() and not fields.strip()

    def matches(self, obj: Mapping[str, Any] | None) -> bool:
        return obj is not None and self.labels.matches(obj) and self.fields.matches(obj)


def field_at(*path: str) -> Getter:
    """The field label of `path` (`status.phase`): its value as a string, "" when absent."""

    def get(obj: Mapping[str, Any]) -> str:
        node: Any = obj
        for part in path:
            node = (node or {}).get(part, "")
        return str(node or "")

    return get
