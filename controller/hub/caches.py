"""The hub side's caches, each kept by an informer (`controller.kube.informer`: paged lists, then a
watch, a store of what the hub side reads and nothing more):

- the cluster namespaces (OCM's registration labels them `open-cluster-management.io/cluster-name`;
  narrowed by `--namespace-selector`);
- the hub copies: the standard conditions of each, and when the hub side saw it change;
- the `ManagedClusterAddOn`s named `addon_name`: resourceVersion, conditions, the console-link
  annotations — not the whole object;
- OCM's view of each cluster (docs/spec.md §12.2): the `ManagedCluster`s' availability, and the
  agent's `ManagedClusterAddOn` (`agent_addon`: the same object in the seed profile; the
  rollout's own in `acm`, where the console reads the observability operator's).

An event hands its namespace to `changed` only when it changes what the hub side reads: a hub
copy's standard conditions, a `ManagedClusterAddOn`'s owned conditions, OCM's view or the
link, a namespace becoming a cluster. OCM's `Progressing` hands over nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Final

from controller.hub.kept import kept, thawed
from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import CLUSTER_LABEL, MANAGED_CLUSTER_ADDON, owned, read_copy
from controller.hub.ocm import MANAGED_CLUSTER
from controller.hub.path import OcmView, find
from controller.hub.writers import HOLD
from controller.kube.api import (
    ADDON,
    ALL_NAMESPACES,
    NAMESPACE,
    ApiResource,
    Kube,
    KubeError,
    resource_version,
)
from controller.kube.backoff import Backoff
from controller.kube.informer import Handlers, Informer
from controller.kube.managers import other_status_writers
from controller.kube.reflector import Selection, WatchMetrics
from statemachines.conditions import format_time, parse_time

__all__ = ["LINK", "LINK_TEXT", "Addon", "HubCaches", "Snapshot", "Watches"]

log = logging.getLogger(__name__)

LINK: Final = "console.open-cluster-management.io/launch-link"
LINK_TEXT: Final = "console.open-cluster-management.io/launch-link-text"
LINK_OWNER: Final = "addon-status.open-cluster-management.io/launch-link"
"""Marks the two link annotations as the hub side's, so that it removes only its own."""
_ANNOTATIONS: Final = (LINK, LINK_TEXT, LINK_OWNER)
_OCM_TYPES: Final = ("Available", "RegistrationApplied", "ManifestApplied")
Conditions = list[dict[str, Any]]
Kept = list[Mapping[str, Any]]  # conditions as the stores keep them (`controller.hub.kept`)
_READS: Final = "conditions"
"""Every kind is read for its metadata and conditions alone: the rest is never decoded."""


@dataclass(frozen=True, slots=True)
class Addon:
    """What the hub side keeps of a ManagedClusterAddOn: its resourceVersion, conditions and
    console-link annotations, not the whole object (the addon manager's part of its status is
    large, and a merge patch needs nothing else)."""

    resource_version: str
    conditions: Kept
    annotations: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> Addon:
        status, meta = obj.get("status"), obj.get("metadata")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        notes = meta.get("annotations") if isinstance(meta, Mapping) else None
        notes = notes if isinstance(notes, Mapping) else {}
        return cls(
            resource_version(obj),
            [kept(c) for c in conditions] if isinstance(conditions, list) else [],
            {k: v for k in _ANNOTATIONS if isinstance(v := notes.get(k), str)},
        )

    @property
    def owned(self) -> Conditions:
        return owned(self.conditions)

    @property
    def ocm(self) -> tuple[Any, ...]:
        """OCM's conditions the hub side reads (never writes)."""
        return tuple(find(self.conditions, kind) for kind in _OCM_TYPES)

    def as_object(self, name: str, namespace: str) -> dict[str, Any]:
        """The stand-in `update_status` starts from (it reads only these fields)."""
        return {
            "metadata": {"name": name, "namespace": namespace,
                         "resourceVersion": self.resource_version},
            "status": {"conditions": self.conditions},
        }  # fmt: skip


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One cluster as the caches hold it, for a sync: its hub copy's standard conditions (None:
    no copy), its ManagedClusterAddOn (None: none seen), why the ManagedClusterAddOns could not
    be listed (if they could not), OCM's view of it, and when its copy last changed."""

    copy: Conditions | None
    addon: Addon | None
    refused: KubeError | None
    view: OcmView
    copy_changed: datetime | None
    writers: tuple[str, ...] = ()  # who else wrote the copy's status (`controller.hub.writers`)


@dataclass(frozen=True, slots=True)
class Watches:
    """The metrics of each watch."""

    copies: WatchMetrics | None = None
    addons: WatchMetrics | None = None
    clusters: WatchMetrics | None = None
    managed_clusters: WatchMetrics | None = None
    agents: WatchMetrics | None = None


class HubCaches:
    """The informers of `kube`'s clusters, hub copies, ManagedClusterAddOns and OCM's view;
    `changed(namespace)` is called (on an informer's thread) when something the hub side reads
    changed there, `synced()` once the clusters, the copies and the ManagedClusterAddOns were
    listed (or the last failed to be)."""

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
        clock: Callable[[], datetime],
        agent_addon: str = "",
        copy_resource: ApiResource = ADDON,
    ) -> None:
        self.copy_name, self._addon_name = copy_name, addon_name
        self._agent_addon = agent_addon or addon_name
        self._metrics, self._changed_at, self._synced_at = metrics, changed, synced
        self._clock = clock
        self._lock = threading.Lock()
        self._addons_refused: KubeError | None = None  # the list's last refusal, if any
        self._copy_changed: dict[str, datetime] = {}  # namespace -> when its copy changed
        self._malformed: dict[str, list[str]] = {}  # the copies' thread: what each held, told
        self._writers: dict[str, tuple[str, ...]] = {}  # namespace -> its copy's other writers

        def count_failure(error: KubeError) -> None:
            metrics.errors.labels(kind=error.kind.value).inc()

        def look(key: str, *_: object) -> None:
            changed(_namespace_of(key))

        def look_if_changed(key: str, old: object, new: object) -> None:
            if old != new:
                changed(_namespace_of(key))

        selector = ",".join(s for s in (CLUSTER_LABEL, namespace_selector) if s)
        common: dict[str, Any] = {"backoff": backoff, "watch_seconds": watch_seconds}
        self.clusters: Informer[bool] = Informer(
            kube, Selection(NAMESPACE, ALL_NAMESPACES, label_selector=selector, reads=_READS),
            name="cluster-namespaces", keep=lambda obj: True,
            handlers=Handlers(added=look, listed=self._check_synced),
            on_failed=count_failure, metrics=watches.clusters, **common,
        )  # fmt: skip
        self.addons: Informer[Addon] = Informer(
            kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name, reads=_READS),
            name="managed-cluster-addons", keep=Addon.of,
            handlers=Handlers(added=look, updated=self._addon_updated, deleted=look,
                              listed=self._addons_listed),
            on_failed=self._addons_failed, metrics=watches.addons, **common,
        )  # fmt: skip
        self.copies: Informer[Kept] = Informer(
            kube, Selection(copy_resource, ALL_NAMESPACES, name=copy_name, reads=_READS),
            name="hub-copies", keep=self._standard,
            handlers=Handlers(added=self._copy_added, updated=self._copy_updated,
                              deleted=look, listed=self._check_synced),
            on_failed=count_failure, metrics=watches.copies, **common,
        )  # fmt: skip
        self.managed_clusters: Informer[dict[str, Any]] = Informer(
            kube, Selection(MANAGED_CLUSTER, ALL_NAMESPACES, reads=_READS),
            name="managed-clusters",
            keep=_availability,
            handlers=Handlers(added=look, updated=look_if_changed, deleted=look),
            on_failed=count_failure, metrics=watches.managed_clusters, **common,
        )  # fmt: skip
        self.agents: Informer[tuple[Any, ...]] | None = None
        if self._agent_addon != addon_name:  # acm: the rollout's own ManagedClusterAddOn
            self.agents = Informer(
                kube, Selection(
                    MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=self._agent_addon, reads=_READS
                ),
                name="agent-addons", keep=lambda obj: Addon.of(obj).ocm,
                handlers=Handlers(added=look, updated=look_if_changed, deleted=look),
                on_failed=count_failure, metrics=watches.agents, **common,
            )  # fmt: skip
        self.informers = tuple(
            i for i in (self.clusters, self.addons, self.copies, self.managed_clusters,
                        self.agents) if i is not None
        )  # fmt: skip

    @property
    def listed(self) -> bool:
        """The clusters and their hub copies were listed at least once."""
        return self.clusters.synced and self.copies.synced

    def namespaces(self) -> list[str]:
        """Every cluster namespace with a hub copy or a ManagedClusterAddOn."""
        found = {_namespace_of(key) for key in self.copies.items()}
        found |= {_namespace_of(key) for key in self.addons.items()}
        clusters = self.clusters.items()
        return sorted(n for n in found if n in clusters)

    def clusters_with_copies(self) -> dict[str, Kept]:
        """Each cluster's hub copy, standard conditions."""
        clusters = self.clusters.items()
        copies = {_namespace_of(key): value for key, value in self.copies.items().items()}
        return {n: c for n, c in copies.items() if n in clusters}

    def snapshot(self, namespace: str) -> Snapshot | None:
        """What a sync of `namespace` starts from; None when it is no cluster, or has neither
        a copy nor a ManagedClusterAddOn."""
        copy = self.copies.get(f"{namespace}/{self.copy_name}")
        addon = self.addons.get(f"{namespace}/{self._addon_name}")
        if self.clusters.get(namespace) is None or (copy is None and addon is None):
            return None
        agent: tuple[Any, ...] | None = addon.ocm if addon is not None else None
        if self.agents is not None:
            agent = self.agents.get(f"{namespace}/{self._agent_addon}")
        cluster = self.managed_clusters.get(namespace)
        available, registered, deployed, cluster = thawed([*(agent or (None,) * 3), cluster])
        view = OcmView(
            cluster=cluster or None, available=available, registered=registered,
            deployed=deployed, has_copy=copy is not None,
        )  # fmt: skip
        if addon is not None:
            addon = replace(addon, conditions=thawed(addon.conditions))
        with self._lock:
            refused, changed = self._addons_refused, self._copy_changed.get(namespace)
            writers = self._writers.get(namespace, ()) if copy is not None else ()
        return Snapshot(
            None if copy is None else thawed(copy), addon, refused, view, changed, writers
        )

    def remember(self, found: dict[str, Any]) -> None:
        """What a read or a write answered, unless the watch already saw something newer."""
        self.addons.remember(found)

    # --- the informers' hooks (each one's own thread) ----------------------------------------

    def _copy_added(self, key: str, new: Kept) -> None:
        """A copy first seen: its own newest transition is the best guess of when it changed."""
        times = [t for c in new if (t := _time(c.get("lastTransitionTime"))) is not None]
        with self._lock:
            if times:
                self._copy_changed[_namespace_of(key)] = max(times)
        self._changed_at(_namespace_of(key))

    def _copy_updated(self, key: str, old: Kept, new: Kept) -> None:
        if old != new:
            with self._lock:
                self._copy_changed[_namespace_of(key)] = self._clock()
            self._changed_at(_namespace_of(key))

    def _addon_updated(self, key: str, old: Addon, new: Addon) -> None:
        if (old.owned, old.ocm, old.annotations) != (new.owned, new.ocm, new.annotations):
            self._changed_at(_namespace_of(key))  # OCM's Progressing, any type not read: no

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

    def _standard(self, obj: Mapping[str, Any]) -> Kept:
        """The copy's standard conditions a `ManagedClusterAddOn` keeps; a copy that holds
        conditions it would refuse (written under a laxer schema) is counted and told once,
        and the rest of it is mirrored."""
        namespace = _namespace(obj)
        meta = obj.get("metadata")
        since = format_time(self._clock() - HOLD)  # a writer gone since keeps its old fields
        writers = other_status_writers(
            meta.get("managedFields") if isinstance(meta, Mapping) else None, since=since
        )
        with self._lock:
            before = self._writers.get(namespace, ())
            self._writers[namespace] = writers
        if writers != before:
            self._changed_at(namespace)
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
        return [kept(c) for c in conditions]


def _availability(obj: Mapping[str, Any]) -> dict[str, Any]:
    """A ManagedCluster's `ManagedClusterConditionAvailable` (empty: none yet)."""
    status = obj.get("status")
    found = find(status.get("conditions") if isinstance(status, Mapping) else None,
                 "ManagedClusterConditionAvailable")  # fmt: skip
    return kept(dict(found)) if found is not None else {}


def _time(text: object) -> datetime | None:
    try:
        return parse_time(text) if isinstance(text, str) else None
    except ValueError:
        return None


def _namespace_of(key: str) -> str:
    """The namespace of an informer's key (`namespace/name`), or a cluster-scoped name."""
    return key.split("/", 1)[0]


def _namespace(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, Mapping) else ""
