"""What the spoke watches, on the one list-then-watch loop (`controller.kube.reflector`): the
addon CR, and each object a health rule names (docs/spec.md §8).

The CR's list is handed to the worker as one `SYNC` event (its absence once as `DELETED`; its
creation then comes on the watch as `ADDED`). A watched object's list and events are handed to
the worker as (resource, the object or None when it is gone, its resourceVersion); a kind the
API server does not serve yet (its CRD not installed) is a failed list, retried with backoff,
and the resource stays `Unknown`/`NotFound` meanwhile (the core starts every resource so).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from controller.kube.api import ADDON, Kube, WatchEvent, resource_version
from controller.kube.backoff import Backoff
from controller.kube.reflector import ObjectKind, Reflector, Selection, WatchMetrics
from controller.spoke.addon import AddonRef
from statemachines.health import Resource

__all__ = ["ADDON_WATCH", "Deliver", "addon_watch", "object_watches"]

log = logging.getLogger(__name__)

ADDON_WATCH = "addon"  # the reflector's name: its thread, logs and metrics label
# (resource name, the object as the API server returns it or None, its resourceVersion)
Deliver = Callable[[str, dict[str, Any] | None, str], None]


def addon_watch(
    kube: Kube,
    ref: AddonRef,
    deliver: Callable[[WatchEvent], None],
    *,
    metrics: WatchMetrics | None = None,
    backoff: Backoff | None = None,
    watch_seconds: int = 300,
) -> Reflector:
    """The CR's list-and-watch; `deliver` gets every event in order (the worker's `observe`)."""
    present = True  # a missing CR is told once, not at every list

    def listed(items: list[dict[str, Any]], version: str) -> None:
        nonlocal present
        if items:
            deliver(WatchEvent("SYNC", items[0]))
        elif present:
            log.warning("the addon CR %s does not exist", ref)
            deliver(WatchEvent("DELETED", {}))
        present = bool(items)

    return Reflector(
        kube,
        Selection(ADDON, ref.namespace, ref.name),
        name=ADDON_WATCH,
        on_listed=listed,
        on_event=deliver,
        metrics=metrics,
        backoff=backoff,
        watch_seconds=watch_seconds,
    )


def object_watches(
    kube: Kube,
    resources: Sequence[Resource],
    deliver: Deliver,
    *,
    metrics: WatchMetrics | None = None,
    backoff: Backoff | None = None,
    watch_seconds: int = 300,
) -> list[Reflector]:
    """A list-and-watch per configured resource's object, named `object-<resource>`."""
    return [
        _object_watch(
            kube, r, deliver, metrics=metrics, backoff=backoff, watch_seconds=watch_seconds
        )
        for r in resources
    ]


def _object_watch(
    kube: Kube,
    resource: Resource,
    deliver: Deliver,
    *,
    metrics: WatchMetrics | None,
    backoff: Backoff | None,
    watch_seconds: int,
) -> Reflector:
    ref = resource.object

    def listed(items: list[dict[str, Any]], version: str) -> None:
        found = items[0] if items else None
        deliver(resource.name, found, resource_version(found) if found else version)

    def changed(event: WatchEvent) -> None:
        gone = event.type == "DELETED"
        deliver(resource.name, None if gone else event.object, resource_version(event.object))

    return Reflector(
        kube,
        Selection(ObjectKind(ref.api_version, ref.kind), ref.namespace or "", ref.name),
        name=f"object-{resource.name}",
        on_listed=listed,
        on_event=changed,
        metrics=metrics,
        backoff=backoff,
        watch_seconds=watch_seconds,
    )
