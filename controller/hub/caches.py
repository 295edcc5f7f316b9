"""The hub side's three caches, each kept by the one list-then-watch loop
(`controller.kube.reflector`) as client-go's informers keep theirs: the cluster namespaces
(namespaces OCM's registration labelled `open-cluster-management.io/cluster-name`, narrowed by
`--namespace-selector`), the hub copies (the standard conditions of each) and the
`ManagedClusterAddOn`s named `addon_name` (each one's resourceVersion and conditions, not the
whole object). An event hands its namespace to `changed` only when it changes what the hub
side reads: a hub copy's standard conditions, a `ManagedClusterAddOn`'s owned conditions
(OCM's writes of `Available` and `Progressing` hand over nothing), a namespace becoming a
cluster.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import CLUSTER_LABEL, MANAGED_CLUSTER_ADDON, owned, read_copy
from controller.kube.api import (
    ADDON,
    ALL_NAMESPACES,
    NAMESPACE,
    Kube,
    KubeError,
    WatchEvent,
    resource_version,
)
from controller.kube.backoff import Backoff
from controller.kube.reflector import Reflector, Selection, WatchMetrics

__all__ = ["Addon", "HubCaches", "Snapshot"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Addon:
    """What the hub side keeps of a ManagedClusterAddOn: its resourceVersion and conditions,
    not the whole object (the addon manager's part of its status is large, and a merge patch
    of the conditions needs nothing else)."""

    resource_version: str
    conditions: list[dict[str, Any]]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Addon:
        status = obj.get("status")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        return cls(resource_version(obj), list(conditions) if isinstance(conditions, list) else [])

    @property
    def owned(self) -> list[dict[str, Any]]:
        return owned(self.conditions)

    def as_object(self, name: str, namespace: str) -> dict[str, Any]:
        """The stand-in `update_status` starts from (it reads only these fields)."""
        return {
            "metadata": {"name": name, "namespace": namespace,
                         "resourceVersion": self.resource_version},
            "status": {"conditions": self.conditions},
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One cluster as the caches hold it, for a sync: its hub copy's standard conditions, its
    ManagedClusterAddOn (None: none seen), and why the ManagedClusterAddOns could not be
    listed, if they could not."""

    copy: list[dict[str, Any]]
    addon: Addon | None
    refused: KubeError | None


@dataclass(frozen=True, slots=True)
class Watches:
    """The metrics of each of the three watches."""

    copies: WatchMetrics | None = None
    addons: WatchMetrics | None = None
    clusters: WatchMetrics | None = None


class HubCaches:
    """The caches of `kube`'s clusters, hub copies and ManagedClusterAddOns; `changed(namespace)`
    is called (on a watch's thread) when something the hub side reads changed there, `synced()`
    once all three were listed (or the ManagedClusterAddOns failed to be)."""

    def __init__(
        self,
        kube: Kube,
        *,
        addon_name: str,
        copy_name: str,
        namespace_selector: str,
        metrics: MirrorMetrics,
        changed: Callable[[str], None],
        synced: Callable[[], None],
        backoff: Backoff,
        watch_seconds: int,
        watches: Watches,
    ) -> None:
        self.copy_name = copy_name
        self._metrics, self._changed_at, self._synced_at = metrics, changed, synced
        self._lock = threading.Lock()
        self._clusters: frozenset[str] | None = None  # None until listed
        self._copies: dict[str, list[dict[str, Any]]] = {}  # namespace -> standard conditions
        self._addons: dict[str, Addon] = {}  # namespace -> its ManagedClusterAddOn
        self._addons_known = False  # listed once, or failed to: a sync may look them up
        self._addons_refused: KubeError | None = None  # the list's last refusal, if any
        self._listed_copies = False
        self._malformed: dict[str, list[str]] = {}  # the copies' thread: what each held, told

        def count_failure(error: KubeError) -> None:
            metrics.errors.labels(kind=error.kind.value).inc()

        selector = ",".join(s for s in (CLUSTER_LABEL, namespace_selector) if s)
        common: dict[str, Any] = {"backoff": backoff, "watch_seconds": watch_seconds}
        self.reflectors = (
            Reflector(
                kube, Selection(NAMESPACE, ALL_NAMESPACES, label_selector=selector),
                name="cluster-namespaces", on_listed=self._clusters_listed,
                on_event=self._cluster_changed, on_failed=count_failure,
                metrics=watches.clusters, **common,
            ),
            Reflector(
                kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name),
                name="managed-cluster-addons", on_listed=self._addons_listed,
                on_event=self._addon_changed, on_failed=self._addons_failed,
                metrics=watches.addons, **common,
            ),
            Reflector(
                kube, Selection(ADDON, ALL_NAMESPACES, name=copy_name),
                name="hub-copies", on_listed=self._listed, on_event=self._copy_changed,
                on_failed=count_failure, metrics=watches.copies, **common,
            ),
        )  # fmt: skip

    @property
    def listed(self) -> bool:
        """The clusters and their hub copies were listed at least once."""
        with self._lock:
            return self._clusters is not None and self._listed_copies

    def namespaces(self) -> list[str]:
        """Every namespace with a hub copy."""
        with self._lock:
            return list(self._copies)

    def clusters_with_copies(self) -> dict[str, list[dict[str, Any]]]:
        """Each cluster's hub copy, standard conditions."""
        with self._lock:
            return {n: c for n, c in self._copies.items() if self._is_cluster(n)}

    def snapshot(self, namespace: str) -> Snapshot | None:
        """What a sync of `namespace` starts from; None when it is no cluster with a copy."""
        with self._lock:
            if namespace not in self._copies or not self._is_cluster(namespace):
                return None
            return Snapshot(
                self._copies[namespace], self._addons.get(namespace), self._addons_refused
            )

    def remember(self, namespace: str, found: Mapping[str, Any]) -> None:
        """What a read or a write answered, unless the watch already saw something newer."""
        addon = Addon.of(found)
        with self._lock:
            known = self._addons.get(namespace)
            if known is None or not _newer(known.resource_version, addon.resource_version):
                self._addons[namespace] = addon

    # --- the watches' hooks (each reflector's own thread) ------------------------------------

    def _clusters_listed(self, items: list[dict[str, Any]], version: str) -> None:
        clusters = frozenset(_name(item) for item in items)
        with self._lock:
            before, self._clusters = self._clusters or frozenset(), clusters
        for namespace in clusters - before:
            self._changed_at(namespace)
        self._check_synced()

    def _cluster_changed(self, event: WatchEvent) -> None:
        name = _name(event.object)
        with self._lock:
            known = self._clusters or frozenset()
            gone = event.type == "DELETED"
            self._clusters = known - {name} if gone else known | {name}
        if not gone and name not in known:
            self._changed_at(name)

    def _listed(self, items: list[dict[str, Any]], version: str) -> None:
        copies = {_namespace(item): self._standard(item) for item in items}
        with self._lock:
            changed = [n for n, c in copies.items() if self._copies.get(n) != c]
            self._copies = copies
            self._listed_copies = True
        for namespace in changed:
            self._changed_at(namespace)
        self._check_synced()

    def _copy_changed(self, event: WatchEvent) -> None:
        namespace = _namespace(event.object)
        conditions = [] if event.type == "DELETED" else self._standard(event.object)
        with self._lock:
            if event.type == "DELETED":
                self._copies.pop(namespace, None)  # the ManagedClusterAddOn keeps the last word
                return
            if self._copies.get(namespace) == conditions:
                return
            self._copies[namespace] = conditions
        self._changed_at(namespace)

    def _addons_listed(self, items: list[dict[str, Any]], version: str) -> None:
        addons = {_namespace(item): Addon.of(item) for item in items}
        with self._lock:
            changed = [
                n for n, a in addons.items()
                if n not in self._addons or self._addons[n].owned != a.owned
            ]  # fmt: skip
            self._addons, self._addons_known, self._addons_refused = addons, True, None
        for namespace in changed:
            self._changed_at(namespace)
        self._check_synced()

    def _addons_failed(self, error: KubeError) -> None:
        self._metrics.errors.labels(kind=error.kind.value).inc()
        with self._lock:  # without their list (no CRD, no grant), each cluster says so itself
            self._addons_known = True
            self._addons_refused = error
        self._check_synced()

    def _addon_changed(self, event: WatchEvent) -> None:
        namespace = _namespace(event.object)
        with self._lock:
            if event.type == "DELETED":
                self._addons.pop(namespace, None)
                return
            addon = Addon.of(event.object)
            known = self._addons.get(namespace)
            if known is not None and _newer(known.resource_version, addon.resource_version):
                return  # our own write's answer was newer than this event
            self._addons[namespace] = addon
            if known is not None and known.owned == addon.owned:
                return  # OCM's Available or Progressing, or any type not ours: not our business
        self._changed_at(namespace)  # a new one, or someone changed what we own: look

    def _check_synced(self) -> None:
        with self._lock:
            ready = self._clusters is not None and self._listed_copies and self._addons_known
        if ready:
            self._synced_at()

    def _standard(self, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The copy's standard conditions a `ManagedClusterAddOn` keeps; a copy that holds
        conditions it would refuse (written under a laxer schema) is counted and told once,
        and the rest of it is mirrored."""
        namespace = _namespace(obj)
        status = obj.get("status")
        conditions, problems = read_copy(
            status.get("conditions") if isinstance(status, Mapping) else []
        )
        if not isinstance(status, Mapping | None):
            problems.append(f"status is a {type(status).__name__}, not an object")
        told = self._malformed.get(namespace)
        if problems and told != problems:
            self._metrics.malformed.inc()
            log.warning(
                "the hub copy %s/%s holds what a ManagedClusterAddOn cannot: left out",
                namespace, self.copy_name, extra={"problems": problems[:5]},
            )  # fmt: skip
        if problems:
            self._malformed[namespace] = problems
        else:
            self._malformed.pop(namespace, None)
        return conditions

    def _is_cluster(self, namespace: str) -> bool:
        """Under `_lock`."""
        return self._clusters is not None and namespace in self._clusters


def _newer(known: str, seen: str) -> bool:
    """`known` is newer than `seen` (resourceVersions compare as numbers on kube-apiserver's
    etcd storage; an unparsable one is never taken as newer)."""
    try:
        return int(known) > int(seen)
    except ValueError:
        return False


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""


def _name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, Mapping) else ""
