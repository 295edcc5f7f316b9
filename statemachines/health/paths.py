"""Kubernetes JSONPath keys (`matchFields[].key`, `messagePath`), compiled once at load.

Kubernetes writes paths as kubectl's templates do: braces optional (`{.status.replicas}`), the
leading dot optional (`status.replicas`, as in Cartographer's `matchFields`), dots inside a name
escaped (`metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration`), filters as
`[?(@.type=="Ready")]`. `normalise` rewrites that into RFC 9535 JSONPath, which `python-jsonpath`
compiles (see the README, "Health rules", for why that library).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

__all__ = ["FieldPath", "normalise"]

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+|\*")


def normalise(key: str) -> str:
    """`{.a.b}`, `.a.b`, `a.b` and `$.a.b` -> `$.a.b`; names with escaped dots or other
    characters -> `['a.b/c']`. Brackets (indexes, filters, quoted names) are kept as written."""
    text = key.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    text = text.removeprefix("$")
    if text and text[0] not in ".[":
        text = "." + text
    out, index = ["$"], 0
    while index < len(text):
        if text[index] == "[":
            end = _bracket_end(text, index)
            out.append(text[index:end])
            index = end
        elif text.startswith("..", index):
            out.append("..")
            index += 2
            index = _name(text, index, out, descent=True)
        elif text[index] == ".":
            index = _name(text, index + 1, out, descent=False)
        else:
            raise ValueError(f"unexpected {text[index]!r} at {index} (after {text[:index]!r})")
    return "".join(out)


def _name(text: str, index: int, out: list[str], *, descent: bool) -> int:
    """Reads one dotted member name from `index` (`\\.` is a dot inside it) into `out`."""
    chars: list[str] = []
    while index < len(text) and text[index] not in ".[":
        if text[index] == "\\" and index + 1 < len(text):
            index += 1
        chars.append(text[index])
        index += 1
    name = "".join(chars)
    if any(char.isspace() for char in name):
        raise ValueError(f"a space in the name {name.strip()!r}")
    if not name:
        return index  # `a.[0]` or `a..[0]`: the bracket follows
    if _PLAIN_NAME.fullmatch(name):
        out.append(name if descent else "." + name)
    else:
        quoted = name.replace("\\", "\\\\").replace("'", "\\'")
        out.append(f"['{quoted}']")
    return index


def _bracket_end(text: str, start: int) -> int:
    """The index just after the `]` closing the bracket at `start` (quotes and nesting kept)."""
    depth, quote, index = 0, "", start
    while index < len(text):
        char = text[index]
        if quote:
            if char == "\\":
                index += 1
            elif char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    raise ValueError(f"the bracket {text[start:]!r} is not closed")


@cache
def _environment() -> Any:
    import jsonpath

    return jsonpath.JSONPathEnvironment()


@dataclass(frozen=True, slots=True)
class FieldPath:
    """A key as written in the configuration and its compiled query."""

    text: str
    query: Any = field(compare=False, repr=False)

    @classmethod
    def compile(cls, text: object) -> FieldPath:
        """Raises ValueError naming the key and what is wrong with it."""
        if isinstance(text, FieldPath):
            return text
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"a JSONPath key must be a non-empty string, not {text!r}")
        import jsonpath  # here, not at import: only a configuration with resources loads it

        try:
            query = _environment().compile(normalise(text))
        except (ValueError, jsonpath.JSONPathError) as error:
            detail = " ".join(line.strip() for line in str(error).splitlines()[:2])
            raise ValueError(f"JSONPath {text!r} does not compile: {detail}") from error
        return cls(text, query)

    def values(self, obj: Mapping[str, Any]) -> list[Any]:
        """Every value the key resolves to in `obj`, in document order; `null`s left out (the
        API server drops them, so a null field is an absent one)."""
        return [value for value in self.query.findall(obj) if value is not None]
