"""The fleet view's read of the hub, through the seam: every cluster's hub copy of the addon
in one list call across all namespaces (`--watch` follows them with the one list-then-watch
loop, `controller.kube.reflector`).

One list call, without `limit`: the API server answers it whole (from its watch cache on a
real hub), which for 5,000 copies is one round trip instead of ten pages; `limit`/`continue`
would only split the same work.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any

from controller.kube.api import ADDON, ALL_NAMESPACES, Kube, KubeError
from controller.kube.api import resource_version as version_of

__all__ = ["Listing", "list_hub_copies"]


@dataclass(frozen=True)
class Listing:
    """Every hub copy as of `resource_version` (where a watch continues)."""

    items: list[dict[str, Any]]
    resource_version: str


def list_hub_copies(kube: Kube) -> Listing:
    """All hub copies (`ObservabilityAddon` in every namespace), in one call. Raises
    KubeError."""
    # Decoding 5,000 copies allocates ~300,000 containers, none in a cycle: the collector's
    # passes over them (half the decode time or more, measured) find nothing, so it waits.
    collecting = gc.isenabled()
    gc.disable()
    try:
        answer = kube.list(ADDON, ALL_NAMESPACES)
    finally:
        if collecting:
            gc.enable()
    items = answer.get("items")
    if not isinstance(items, list):
        raise KubeError(f"list {ADDON.kind} in every namespace: the answer has no items")
    return Listing([i for i in items if isinstance(i, dict)], version_of(answer))
