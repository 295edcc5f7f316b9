"""The hub side's three caches, each kept by an informer (`controller.kube.informer`: paged lists,
then a watch, a store of what the hub side reads): the cluster namespaces
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
from controller.kube.api import ADDON, ALL_NAMESPACES, NAMESPACE, Kube, KubeError, resource_version
from controller.kube.backoff import Backoff
from controller.kube.informer import Handlers, Informer
from controller.kube.reflector import Selection, WatchMetrics

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
    """The informers of `kube`'s clusters, hub copies and ManagedClusterAddOns;
    `changed(namespace)` is called (on an informer's thread) when something the hub side reads
    changed there, `synced()` once all three were listed (or the ManagedClusterAddOns failed to
    be)."""

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
        self.copy_name, self._addon_name = copy_name, addon_name
        self._metrics, self._changed_at, self._synced_at = metrics, changed, synced
        self._lock = threading.Lock()
        self._addons_refused: KubeError | None = None  # the list's last refusal, if any
        self._malformed: dict[str, list[str]] = {}  # the copies' thread: what each held, told

        def count_failure(error: KubeError) -> None:
            metrics.errors.labels(kind=error.kind.value).inc()

        def look(key: str, *_: object) -> None:
            changed(_namespace_of(key))

        selector = ",".join(s for s in (CLUSTER_LABEL, namespace_selector) if s)
        common: dict[str, Any] = {"backoff": backoff, "watch_seconds": watch_seconds}
        self.clusters: Informer[bool] = Informer(
            kube, Selection(NAMESPACE, ALL_NAMESPACES, label_selector=selector),
            name="cluster-namespaces", keep=lambda obj: True,
            handlers=Handlers(added=look, listed=self._check_synced),
            on_failed=count_failure, metrics=watches.clusters, **common,
        )  # fmt: skip
        self.addons: Informer[Addon] = Informer(
            kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name),
            name="managed-cluster-addons", keep=Addon.of,
            handlers=Handlers(added=look, updated=self._addon_updated, listed=self._addons_listed),
            on_failed=self._addons_failed, metrics=watches.addons, **common,
        )  # fmt: skip
        self.copies: Informer[list[dict[str, Any]]] = Informer(
            kube, Selection(ADDON, ALL_NAMESPACES, name=copy_name),
            name="hub-copies", keep=self._standard,
            handlers=Handlers(added=look, updated=self._copy_updated, listed=self._check_synced),
            on_failed=count_failure, metrics=watches.copies, **common,
        )  # fmt: skip
        self.informers = (self.clusters, self.addons, self.copies)

    @property
    def listed(self) -> bool:
        """The clusters and their hub copies were listed at least once."""
        return self.clusters.synced and self.copies.synced

    def namespaces(self) -> list[str]:
        """Every namespace with a hub copy."""
        return [_namespace_of(key) for key in self.copies.items()]

    def clusters_with_copies(self) -> dict[str, list[dict[str, Any]]]:
        """Each cluster's hub copy, standard conditions."""
        clusters = self.clusters.items()
        copies = {_namespace_of(key): value for key, value in self.copies.items().items()}
        return {n: c for n, c in copies.items() if n in clusters}

    def snapshot(self, namespace: str) -> Snapshot | None:
        """What a sync of `namespace` starts from; None when it is no cluster with a copy."""
        copy = self.copies.get(f"{namespace}/{self.copy_name}")
        if copy is None or self.clusters.get(namespace) is None:
            return None
        with self._lock:
            refused = self._addons_refused
        return Snapshot(copy, self.addons.get(f"{namespace}/{self._addon_name}"), refused)

    def remember(self, found: dict[str, Any]) -> None:
        """What a read or a write answered, unless the watch already saw something newer."""
        self.addons.remember(found)

    # --- the informers' hooks (each one's own thread) ----------------------------------------

    def _copy_updated(self, key: str, old: list[dict[str, Any]], new: list[dict[str, Any]]) -> None:
        if old != new:
            self._changed_at(_namespace_of(key))

    def _addon_updated(self, key: str, old: Addon, new: Addon) -> None:
        if old.owned != new.owned:  # OCM's Available or Progressing, any type not ours: no
            self._changed_at(_namespace_of(key))

    def _addons_listed(self, version: str) -> None:
        with self._lock:
            self._addons_refused = None
        self._check_synced()

    def _addons_failed(self, error: KubeError) -> None:
        self._metrics.errors.labels(kind=error.kind.value).inc()
        with self._lock:  # without their list (no CRD, no grant), each cluster says so itself
            self._addons_refused = error
        self._check_synced()

    def _check_synced(self, version: str = "") -> None:
        with self._lock:
            addons_known = self._addons_refused is not None
        if self.listed and (addons_known or self.addons.synced):
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


def _namespace_of(key: str) -> str:
    """The namespace of an informer's key (`namespace/name`), or a Namespace's own name."""
    return key.split("/", 1)[0]


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""
