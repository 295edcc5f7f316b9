"""Related objects (docs/spec.md §9): what `status.relatedObjects[]` lists, in the shape a
ClusterOperator lists them, so that `oc adm inspect`-style tools and people know where to look.

The core does not find them: the shell names the addon CR and the Lease, the health rules name
their objects, the configuration adds its own (`relatedObjects`). The core writes them as given,
first occurrence first, each once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["RelatedObject", "merged"]


@dataclass(frozen=True, slots=True)
class RelatedObject:
    group: str  # "" for the core API group
    resource: str  # the plural, lower case: `deployments`
    name: str
    namespace: str = ""  # "" for a cluster-scoped object

    def to_api(self) -> dict[str, str]:
        return {
            "group": self.group,
            "resource": self.resource,
            "namespace": self.namespace,
            "name": self.name,
        }

    @classmethod
    def from_api(cls, raw: Mapping[str, Any]) -> RelatedObject:
        """Raises KeyError or TypeError when `resource` or `name` is missing or not a string."""
        fields = {k: raw.get(k, "") for k in ("group", "resource", "namespace", "name")}
        if not all(isinstance(v, str) for v in fields.values()):
            raise TypeError("group, resource, namespace and name are strings")
        if not fields["resource"] or not fields["name"]:
            raise KeyError("resource and name are required")
        return cls(**fields)


def merged(*sources: Iterable[RelatedObject]) -> tuple[RelatedObject, ...]:
    """Every object once, in the order first named."""
    return tuple(dict.fromkeys(o for source in sources for o in source))
