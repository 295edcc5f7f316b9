"""YAML as the project reads it from a file a person wrote (a configuration, a scenario, the
grants, a kubeconfig): the safe loader, strict where YAML is treacherous.

- Aliases (`*name`) may reuse a part (the shipped configuration reuses a rule so), but a
  document whose aliases would expand it beyond `MAX_VALUES` values is refused: a few lines of
  aliases can expand into gigabytes (a "billion laughs", which go-yaml refuses as "excessive
  aliasing" for kubectl too) once anything walks them.
- A key given twice in one mapping is refused: YAML's loader would keep the last in silence.
- A document nested deeper than the parser can follow (libyaml's 1,000 levels) is refused,
  not a RecursionError.

A problem is a `YAMLFileError` saying where (`line 3, column 7`) and what, in one line.
"""

from __future__ import annotations

from typing import Any

import yaml

__all__ = ["MAX_VALUES", "YAMLFileError", "load_yaml"]

MAX_VALUES = 100_000  # scalars, lists and mappings of a document, its aliases expanded


class YAMLFileError(ValueError):
    """`where: what` of a document that is not YAML the project reads."""


class _Refused(yaml.MarkedYAMLError):
    """YAML, but not what the project reads (an alias bomb, a key given twice)."""


# libyaml's parser where PyYAML was built with it (every wheel): a 5,000-resource
# configuration was read and refused in 0.8 s instead of 2.2 s with the pure one (one run).
_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_Base):  # type: ignore[misc]
    def get_single_node(self) -> Any:
        root = super().get_single_node()
        if root is not None and _expanded(root, {}) > MAX_VALUES:
            raise _Refused(
                None, None, f"its aliases (*name) expand it beyond {MAX_VALUES:,} values",
                root.start_mark,
            )  # fmt: skip
        return root

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                repeated = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the constructor says so
                break
            if repeated:
                raise _Refused(
                    None, None, f"the key {str(key)[:80]!r} is given twice", key_node.start_mark
                )
        return super().construct_mapping(node, deep=deep)


def _expanded(node: Any, sizes: dict[int, int]) -> int:
    """How many values `node` stands for once every alias is expanded (each node counted once
    per place it appears; an aliased node's size computed once)."""
    known = sizes.get(id(node))
    if known is not None:
        return known
    sizes[id(node)] = MAX_VALUES + 1  # a cycle through an alias counts as too many
    children: list[Any] = []
    if isinstance(node, yaml.SequenceNode):
        children = node.value
    elif isinstance(node, yaml.MappingNode):
        children = [part for pair in node.value for part in pair]
    total = 1
    for child in children:
        total += _expanded(child, sizes)
        if total > MAX_VALUES:
            break
    sizes[id(node)] = total
    return total


def load_yaml(text: str | bytes) -> Any:
    """The document in `text`; raises YAMLFileError naming the place and the problem."""
    try:
        return yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "the file"
        problem = error.problem or error.context or "?"
        if isinstance(error, _Refused):
            said = problem
        elif "nesting depth" in problem:  # libyaml's limit: 1,000 levels
            said = "nested deeper than it can be read"
        else:
            said = f"not valid YAML: {problem}"
        raise YAMLFileError(f"{where}: {said}") from None
    except yaml.reader.ReaderError as error:
        raise YAMLFileError(f"byte {error.position}: not UTF-8 text ({error.reason})") from None
    except yaml.YAMLError as error:
        raise YAMLFileError(f"the file: not valid YAML ({type(error).__name__})") from None
    except RecursionError:
        raise YAMLFileError("the file: nested deeper than it can be read") from None
