"""What the spoke watches, each through an informer (`controller.kube.informer`): the addon CR,
and each object a health rule names (docs/spec.md §8).

The CR is handed to the worker as it is listed (`ADDED`) and as each change comes (its absence,
found by a list, once as `DELETED`). A watched object is handed to the worker as (resource, the
object or None when it is gone, its resourceVersion), and once after every list; a kind the API
server does not serve yet (its CRD not installed) is a failed list, retried with backoff, and the
resource stays `Unknown`/`NotFound` meanwhile (the core starts every resource so).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from controller.kube.api import Kube, WatchEvent, resource_version
from controller.kube.backoff import Backoff
from controller.kube.informer import Handlers, Informer
from controller.kube.managers import OURS, status_writers_of
from controller.kube.reflector import ObjectKind, Selection, WatchMetrics
from controller.spoke.addon import AddonRef
from statemachines.health import Resource

__all__ = ["ADDON_WATCH", "Deliver", "addon_watch", "object_watches"]

log = logging.getLogger(__name__)

ADDON_WATCH = "addon"  # the informer's name: its thread, logs and metrics label
# (resource name, the object as the API server returns it or None, its resourceVersion)
Deliver = Callable[[str, dict[str, Any] | None, str], None]
Object = dict[str, Any]


def addon_watch(
    kube: Kube,
    ref: AddonRef,
    deliver: Callable[[WatchEvent], None],
    *,
    metrics: WatchMetrics | None = None,
    backoff: Backoff | None = None,
    watch_seconds: int = 300,
) -> Informer[Object]:
    """The CR's informer; `deliver` gets every change in order (the worker's `observe`)."""
    present = True  # a missing CR is told once, not at every list

    def added(key: str, new: Object) -> None:
        nonlocal present
        present = True
        deliver(WatchEvent("ADDED", new))

    told: tuple[str, ...] = ()

    def updated(key: str, old: Object, new: Object) -> None:
        nonlocal told
        writer = _another_status_write(old, new)
        if writer is not None:  # not fought: the next verdict of the project's own writes over it
            if writer not in told:
                told = (*told, writer)
                log.warning(
                    "the addon CR %s: its status was written by %s (managedFields), not by this "
                    "controller; not written back: switch that writer off (docs/spec.md §12.1)",
                    ref, writer,
                )  # fmt: skip
            return
        deliver(WatchEvent("MODIFIED", new))

    def gone(key: str, old: Object) -> None:
        nonlocal present
        if present:
            log.warning("the addon CR %s does not exist", ref)
            deliver(WatchEvent("DELETED", old))
        present = False

    def listed(version: str) -> None:
        if not informer.items():
            gone("", {})

    informer: Informer[Object] = Informer(
        kube,
        Selection(ref.resource, ref.namespace, ref.name),
        name=ADDON_WATCH,
        handlers=Handlers(added=added, updated=updated, deleted=gone, listed=listed),
        metrics=metrics,
        backoff=backoff,
        watch_seconds=watch_seconds,
    )
    return informer


def _another_status_write(old: Object, new: Object) -> str | None:
    """The manager of another writer's status-only write that made `new` of `old` (the entry
    of managedFields the write changed is another manager's); None for any other change."""
    old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
    if old.get("status") == new.get("status") or old.get("spec") != new.get("spec"):
        return None
    if old_meta.get("generation") != new_meta.get("generation"):
        return None
    writers = status_writers_of(old_meta.get("managedFields"), new_meta.get("managedFields"))
    others = [w for w in writers if w != OURS]
    return ", ".join(others) if others and OURS not in writers else None


def object_watches(
    kube: Kube,
    resources: Sequence[Resource],
    deliver: Deliver,
    *,
    metrics: WatchMetrics | None = None,
    backoff: Backoff | None = None,
    watch_seconds: int = 300,
) -> list[Informer[Object]]:
    """An informer per configured resource's object, named `object-<resource>`."""
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
) -> Informer[Object]:
    ref = resource.object

    def changed(key: str, *objects: Object) -> None:
        deliver(resource.name, objects[-1], resource_version(objects[-1]))

    def gone(key: str, old: Object) -> None:
        deliver(resource.name, None, resource_version(old))

    def listed(version: str) -> None:
        if not informer.items():
            deliver(resource.name, None, version)

    informer: Informer[Object] = Informer(
        kube,
        Selection(ObjectKind(ref.api_version, ref.kind), ref.namespace or "", ref.name),
        name=f"object-{resource.name}",
        handlers=Handlers(added=changed, updated=changed, deleted=gone, listed=listed),
        metrics=metrics,
        backoff=backoff,
        watch_seconds=watch_seconds,
    )
    return informer
