"""A YAML request body as kube-apiserver reads it (sigs.k8s.io/yaml over go-yaml v2): to JSON,
timestamps left as strings, and aliases allowed only while their expansion stays a modest
share of the document: go-yaml counts each node it decodes, and fails with `document contains
excessive aliasing` once more than 100 of over 1000 decodes came through aliases and their
share passes 99% (falling to 10% between 400,000 and 4,000,000 decodes). The count runs on
PyYAML's composed graph, where an alias is the anchored node itself, before anything is
expanded: a billion laughs is refused after a few thousand steps."""

from __future__ import annotations

from typing import Any, Final

import yaml

__all__ = ["YAMLBodyError", "load_yaml"]

_LOW: Final = 400_000
_HIGH: Final = 4_000_000


class YAMLBodyError(ValueError):
    """go-yaml's refusal, in its words (`yaml: ...`)."""


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver: kube-apiserver keeps timestamps strings."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _allowed_ratio(decodes: int) -> float:
    if decodes <= _LOW:
        return 0.99
    if decodes >= _HIGH:
        return 0.10
    return 0.99 - 0.89 * (decodes - _LOW) / (_HIGH - _LOW)


class _Counter:
    """go-yaml's decoder.unmarshal bookkeeping, walked over the composed nodes."""

    def __init__(self) -> None:
        self.decodes = 0
        self.aliased = 0
        self.seen: set[int] = set()
        self.open: set[int] = set()

    def count(self, depth: int) -> None:
        self.decodes += 1
        if depth > 0:
            self.aliased += 1
        if (
            self.aliased > 100
            and self.decodes > 1000
            and self.aliased / self.decodes > _allowed_ratio(self.decodes)
        ):
            raise YAMLBodyError("yaml: document contains excessive aliasing")

    def walk(self, root: yaml.Node) -> None:
        stack: list[tuple[yaml.Node, int, bool]] = [(root, 0, False)]
        while stack:
            node, depth, leaving = stack.pop()
            if leaving:
                self.open.discard(id(node))
                continue
            if id(node) in self.seen:  # a second appearance is an alias of the anchored node
                if id(node) in self.open:
                    raise YAMLBodyError("yaml: anchor value contains itself")
                self.count(depth)
                depth += 1
            self.seen.add(id(node))
            self.count(depth)
            children: list[yaml.Node] = []
            if isinstance(node, yaml.SequenceNode):
                children = list(node.value)
            elif isinstance(node, yaml.MappingNode):
                children = [part for pair in node.value for part in pair]
            stack.append((node, depth, True))
            self.open.add(id(node))
            stack.extend((child, depth, False) for child in reversed(children))


def load_yaml(body: bytes) -> Any:
    """The body's one document as JSON values; raises YAMLBodyError or yaml.YAMLError."""
    loader = _Loader(body)
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _Counter().walk(root)
        return loader.construct_document(root)
    finally:
        loader.dispose()
