"""Kubernetes JSONPath keys (`matchFields[].key`, `messagePath`), compiled once at load.

Kubernetes writes paths as kubectl's templates do: braces optional (`{.status.replicas}`), the
leading dot optional (`status.replicas`, as in Cartographer's `matchFields`), dots inside a name
escaped (`metadata.annotations.kubectl\\.kubernetes\\.io/last-applied-configuration`), filters as
`[?(@.type=="Ready")]`. `normalise` rewrites that into RFC 9535 JSONPath, which `python-jsonpath`
compiles (docs/reference/health-rules.md says why that library).

Nothing a key says can freeze the process: the filter functions `match()` and `search()` run on
RE2 (`google-re2`), in time linear in the text, as Go's regexp does for kube-apiserver, and a
pattern RE2 cannot run (a backreference, a lookaround) or the backtracking `=~` operator is
refused when the configuration is loaded. A key that fails on an object (a recursion too deep
for `..`) is an `EvaluationFailed`, which the rule turns into a result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any

from statemachines.health.expressions import EvaluationFailed
from statemachines.size import cut

__all__ = ["FieldPath", "normalise"]

_PLAIN_NAME = re.compile(r"[A-Za-z0-9_-]+|\*")
# A pattern given as a string literal to match() or search(): checked with RE2 at load.
_PATTERN_ARGUMENT = re.compile(
    r"\b(?:match|search)\(\s*[^,()]*,\s*(?P<quote>['\"])(?P<pattern>(?:\\.|(?!(?P=quote)).)*)"
    r"(?P=quote)\s*\)"
)


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


@lru_cache(maxsize=256)
def _linear(pattern: str) -> Any:
    """The RE2 program of `pattern`; None when RE2 cannot run it (then nothing matches, as
    RFC 9535 says of a pattern that is not valid)."""
    import re2

    quiet = re2.Options()
    quiet.log_errors = False  # RE2 would print to stderr, past the JSON logs
    try:
        return re2.compile(pattern, quiet)
    except re2.error:
        return None


class _LinearRegex:
    """`match()` (the whole text) or `search()` (anywhere in it) of RFC 9535, on RE2."""

    def __init__(self, *, whole: bool) -> None:
        from jsonpath.function_extensions import ExpressionType

        self.arg_types = [ExpressionType.VALUE, ExpressionType.VALUE]
        self.return_type = ExpressionType.LOGICAL
        self._whole = whole

    def __call__(self, value: object, pattern: object) -> bool:
        if not isinstance(value, str) or not isinstance(pattern, str):
            return False
        program = _linear(pattern)
        if program is None:
            return False
        found = program.fullmatch(value) if self._whole else program.search(value)
        return found is not None


@cache
def _environment() -> Any:
    import jsonpath

    environment = jsonpath.JSONPathEnvironment()
    environment.function_extensions["match"] = _LinearRegex(whole=True)
    environment.function_extensions["search"] = _LinearRegex(whole=False)
    return environment


def _check_regexes(key: str) -> None:
    """Refuse what could backtrack: the `=~` operator, or a pattern RE2 cannot run."""
    if "=~" in re.sub(r"'(?:\\.|[^'])*'|\"(?:\\.|[^\"])*\"", "", key):
        raise ValueError("the =~ operator backtracks: use match() or search(), which run on RE2")
    for found in _PATTERN_ARGUMENT.finditer(key):
        pattern = re.sub(r"\\(.)", r"\1", found.group("pattern"))  # the literal, unescaped
        if _linear(pattern) is None:
            raise ValueError(
                f"the pattern {pattern!r} is not one RE2 runs in linear time"
                " (no backreferences, no lookaround)"
            )


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
            normalised = normalise(text)
            _check_regexes(normalised)
            query = _environment().compile(normalised)
        except (ValueError, jsonpath.JSONPathError) as error:
            detail = " ".join(line.strip() for line in str(error).splitlines()[:2])
            raise ValueError(
                f"JSONPath {cut(text, 120)!r} does not compile: {cut(detail, 300)}"
            ) from error
        return cls(text, query)

    def values(self, obj: Mapping[str, Any]) -> list[Any]:
        """Every value the key resolves to in `obj`, in document order; `null`s left out (the
        API server drops them, so a null field is an absent one). Raises EvaluationFailed when
        the key cannot be followed through this object (nested deeper than `..` recurses)."""
        import jsonpath

        try:
            found = _found(self.query, obj)
        except (jsonpath.JSONPathError, RecursionError) as error:
            detail = str(error).splitlines()[0]
            raise EvaluationFailed(f"JSONPath {self.text!r}: {detail}") from error
        return [value for value in found if value is not None]


def _found(query: Any, obj: Mapping[str, Any]) -> list[Any]:
    """`query.findall(obj)`, without the garbage findall leaves: python-jsonpath links every
    match to its parent and the parent back to it, a cycle per match that only the cyclic
    collector frees, late (a list of 20,000 conditions left hundreds of MiB waiting for it).
    The matches are made from a root match held here, then unlinked, so each goes as soon as
    nothing refers to it."""
    import jsonpath

    if not isinstance(query, jsonpath.JSONPath) or query.pseudo_root:
        return list(query.findall(obj))  # a union of paths: as the library does
    root = jsonpath.JSONPathMatch(
        filter_context={}, obj=obj, parent=None, path=query.env.root_token, parts=(), root=obj
    )
    matches: Any = [root]
    for segment in query.segments:
        matches = segment.resolve(matches)
    try:
        return [match.obj for match in matches]
    finally:
        stack = [root]
        while stack:
            node = stack.pop()
            stack.extend(node.children)
            node.children, node.parent = [], None
