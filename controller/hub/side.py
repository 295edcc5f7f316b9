"""The hub side: mirrors the conditions it owns from each cluster's hub copy onto the cluster's
`ManagedClusterAddOn` (docs/spec.md §12; the rule itself is `controller.hub.mirror`), shaped as
a client-go controller: informer caches, a work queue, one `sync(namespace)`.

Three caches, each kept by the one list-then-watch loop (`controller.kube.reflector`): the
cluster namespaces (namespaces OCM's registration labelled `open-cluster-management.io/
cluster-name`, narrowed by `--namespace-selector`), the hub copies (the standard conditions of
each), and the `ManagedClusterAddOn`s named `addon_name` (each one's resourceVersion and
conditions). An event queues its namespace only when it changes what the hub side reads: a hub
copy's standard conditions, a `ManagedClusterAddOn`'s owned conditions (OCM's writes of
`Available` and `Progressing` queue nothing), a namespace entering the clusters.

The worker waits until the three caches are filled, then syncs one namespace at a time: the
pure mirror from the cached `ManagedClusterAddOn`, and only when an owned condition differs and
`Repairs` allows it, a JSON merge patch of its status conditions with the cached
resourceVersion as precondition (the one status-update loop, `controller.kube.update`; a fresh
read only after a 409). A failed sync goes back on the queue after that namespace's own backoff,
so one cluster without its `ManagedClusterAddOn` never delays the others. Every
`resync_interval` every cluster is queued, which compares the caches and reads nothing. Only
the leader writes (`Role.may_write()`, asked again right before every write); a replica that
becomes leader queues every cluster, since what the previous leader left undone is unknown.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import (
    CLUSTER_LABEL,
    MANAGED_CLUSTER_ADDON,
    OWNED_TYPES,
    ClusterState,
    Repairs,
    cluster_state,
    mirror,
    owned,
    read_copy,
)
from controller.kube.api import (
    ADDON,
    ALL_NAMESPACES,
    NAMESPACE,
    ConflictError,
    ErrorKind,
    Kube,
    KubeError,
    WatchEvent,
    resource_version,
)
from controller.kube.backoff import Backoff
from controller.kube.reflector import Reflector, Selection, WatchMetrics
from controller.kube.runnable import Runnable
from controller.kube.update import update_status
from controller.kube.workqueue import WorkQueue
from controller.ops.role import Role

__all__ = ["CLUSTER_LABEL", "HubSide"]

log = logging.getLogger(__name__)

_RESYNC: Final = ""  # the queue's key for "queue every cluster"


class _NotLeader(Exception):  # noqa: N818 - a signal, not an error
    """Leadership ended between the read and the write."""


class HubSide:
    """Mirrors hub copies onto `ManagedClusterAddOn`s through `kube` (the hub); `start()` and
    `stop()` its threads. See the module docstring."""

    def __init__(
        self,
        kube: Kube,
        *,
        metrics: MirrorMetrics,
        role: Role | None = None,
        addon_name: str = "addon-status",
        copy_name: str = "observability-addon",
        namespace_selector: str = "",
        resync_interval: float = 300.0,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
        watch_metrics: WatchMetrics | None = None,
        addon_watch_metrics: WatchMetrics | None = None,
        cluster_watch_metrics: WatchMetrics | None = None,
        conflict_retries: int = 5,
    ) -> None:
        self._kube, self._metrics = kube, metrics
        self._role = role or Role()
        self.addon_name, self.copy_name = addon_name, copy_name
        self._resync = resync_interval
        self._attempts = max(conflict_retries, 1)
        backoff = backoff or Backoff(initial=0.5, maximum=60.0)
        self.queue: WorkQueue[str] = WorkQueue(backoff=backoff)
        self._worker = Runnable("hub-mirror", self._work, self.queue.shut_down)
        self._lock = threading.Lock()
        self._synced = threading.Event()
        # Guarded by `_lock`: the three caches.
        self._clusters: frozenset[str] | None = None  # None until listed
        self._copies: dict[str, list[dict[str, Any]]] = {}  # namespace -> standard conditions
        self._addons: dict[str, _Addon] = {}  # namespace -> its ManagedClusterAddOn
        self._addons_known = False  # listed once, or failed to: a sync may look them up
        self._addons_refused: KubeError | None = None  # the list's last refusal, if any
        self._listed_copies = False
        # Only the worker touches these:
        self._repairs = Repairs()
        self._failing: dict[str, ErrorKind] = {}
        self._contested: set[str] = set()
        # The copies' watch thread only: what each malformed copy held, as last told.
        self._malformed: dict[str, list[str]] = {}

        def count_failure(error: KubeError) -> None:
            self._metrics.errors.labels(kind=error.kind.value).inc()

        selector = ",".join(s for s in (CLUSTER_LABEL, namespace_selector) if s)
        common: dict[str, Any] = {"backoff": backoff, "watch_seconds": watch_seconds}
        self.cluster_reflector = Reflector(
            kube, Selection(NAMESPACE, ALL_NAMESPACES, label_selector=selector),
            name="cluster-namespaces", on_listed=self._clusters_listed,
            on_event=self._cluster_changed, on_failed=count_failure,
            metrics=cluster_watch_metrics, **common,
        )  # fmt: skip
        self.reflector = Reflector(
            kube, Selection(ADDON, ALL_NAMESPACES, name=copy_name),
            name="hub-copies", on_listed=self._listed, on_event=self._changed,
            on_failed=count_failure, metrics=watch_metrics, **common,
        )  # fmt: skip
        self.addon_reflector = Reflector(
            kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name),
            name="managed-cluster-addons", on_listed=self._addons_listed,
            on_event=self._addon_changed, on_failed=self._addons_failed,
            metrics=addon_watch_metrics, **common,
        )  # fmt: skip
        self._reflectors = (self.cluster_reflector, self.addon_reflector, self.reflector)

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._worker.start()
        for reflector in self._reflectors:
            reflector.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every thread, waiting up to `timeout` for each (a hub call in progress ends
        with its own timeout)."""
        self._synced.set()  # frees a worker still waiting for the caches
        self._worker.stop(timeout)
        for reflector in self._reflectors:
            reflector.stop(timeout)

    def resync(self) -> None:
        """Queue every cluster now (leadership gained; a test)."""
        self.queue.add(_RESYNC)

    # --- what probes and tests look at ---------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._worker.alive and all(r.alive for r in self._reflectors)

    @property
    def synced(self) -> bool:
        """The clusters and their hub copies were listed at least once."""
        with self._lock:
            return self._clusters is not None and self._listed_copies

    def wait_idle(self, timeout: float) -> bool:
        """Block until synced and nothing is queued or in progress (a retry waiting for its
        backoff counts as idle); False on timeout."""
        return self._synced.wait(timeout) and self.queue.wait_idle(timeout)

    def cluster_states(self) -> list[ClusterState]:
        """Each cluster, as its hub copy was last seen (for the metrics)."""
        with self._lock:
            copies = {n: c for n, c in self._copies.items() if self._is_cluster(n)}
        return [cluster_state(namespace, copies[namespace]) for namespace in sorted(copies)]

    # --- the caches' hooks (each reflector's own thread) -------------------------------------

    def _clusters_listed(self, items: list[dict[str, Any]], version: str) -> None:
        clusters = frozenset(_name(item) for item in items)
        with self._lock:
            before, self._clusters = self._clusters or frozenset(), clusters
        for namespace in clusters - before:
            self.queue.add(namespace)
        self._check_synced()

    def _cluster_changed(self, event: WatchEvent) -> None:
        name = _name(event.object)
        with self._lock:
            known = self._clusters or frozenset()
            gone = event.type == "DELETED"
            self._clusters = known - {name} if gone else known | {name}
        if not gone and name not in known:
            self.queue.add(name)

    def _listed(self, items: list[dict[str, Any]], version: str) -> None:
        copies = {_namespace(item): self._standard(item) for item in items}
        with self._lock:
            changed = [n for n, c in copies.items() if self._copies.get(n) != c]
            self._copies = copies
            self._listed_copies = True
        for namespace in changed:
            self.queue.add(namespace)
        self._check_synced()

    def _changed(self, event: WatchEvent) -> None:
        namespace = _namespace(event.object)
        conditions = [] if event.type == "DELETED" else self._standard(event.object)
        with self._lock:
            if event.type == "DELETED":
                self._copies.pop(namespace, None)  # the ManagedClusterAddOn keeps the last word
                return
            if self._copies.get(namespace) == conditions:
                return
            self._copies[namespace] = conditions
        self.queue.add(namespace)

    def _addons_listed(self, items: list[dict[str, Any]], version: str) -> None:
        addons = {_namespace(item): _Addon.of(item) for item in items}
        with self._lock:
            changed = [
                n for n, a in addons.items()
                if n not in self._addons or self._addons[n].owned != a.owned
            ]  # fmt: skip
            self._addons, self._addons_known, self._addons_refused = addons, True, None
        for namespace in changed:
            self.queue.add(namespace)
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
            addon = _Addon.of(event.object)
            known = self._addons.get(namespace)
            if known is not None and _newer(known.resource_version, addon.resource_version):
                return  # our own write's answer was newer than this event
            self._addons[namespace] = addon
            if known is not None and known.owned == addon.owned:
                return  # OCM's Available or Progressing, or any type not ours: not our business
        self.queue.add(namespace)  # a new one, or someone changed what we own: look

    def _check_synced(self) -> None:
        with self._lock:
            ready = self._clusters is not None and self._listed_copies and self._addons_known
        if ready and not self._synced.is_set():
            self._synced.set()
            self.queue.add_after(_RESYNC, self._resync)

    # --- the worker ----------------------------------------------------------------------------

    def _work(self) -> None:
        self._synced.wait()
        while (namespace := self.queue.get()) is not None:
            try:
                if namespace == _RESYNC:
                    self._queue_every_cluster()
                elif self._role.may_write():
                    self.sync(namespace)
            except Exception:  # a bug must not end the only worker
                log.exception("mirroring %s failed unexpectedly", namespace)
                self.queue.add_rate_limited(namespace)
            finally:
                self.queue.done(namespace)

    def _queue_every_cluster(self) -> None:
        with self._lock:
            namespaces = list(self._copies)
        for namespace in namespaces:
            self.queue.add(namespace)
        self.queue.add_after(_RESYNC, self._resync)

    def sync(self, namespace: str) -> None:
        """Bring `namespace`'s ManagedClusterAddOn in line with its hub copy (the worker's one
        step; failures go back on the queue with that namespace's backoff)."""
        name = self.addon_name
        with self._lock:
            if namespace not in self._copies or not self._is_cluster(namespace):
                return
            copy = self._copies[namespace]
            addon = self._addons.get(namespace)
            refused = self._addons_refused
        if addon is None:
            error = refused or KubeError(f"no ManagedClusterAddOn {namespace}/{name}", status=404)
            self._failed(namespace, error)
            return
        if mirror(copy, addon.conditions) is None:
            self._succeeded(namespace)
            return
        if not self._repairs.due(namespace, copy):
            self._contest(namespace)
            return

        def conditions(status: Mapping[str, Any]) -> dict[str, Any] | None:
            new = mirror(copy, status.get("conditions") or [])
            return None if new is None else {**status, "conditions": new}

        def read() -> dict[str, Any]:
            found = self._kube.get(MANAGED_CLUSTER_ADDON, namespace, name)
            self._remember(namespace, found)
            return found

        def write(body: dict[str, Any]) -> dict[str, Any]:
            if not self._role.may_write():
                raise _NotLeader
            patch = {
                "metadata": {"resourceVersion": body["metadata"]["resourceVersion"]},
                "status": {"conditions": body["status"]["conditions"]},
            }
            stored = self._kube.patch_status(MANAGED_CLUSTER_ADDON, namespace, name, patch)
            self._metrics.writes.inc()
            self._remember(namespace, stored)
            return stored

        def conflicted(attempt: int, error: ConflictError) -> None:
            self._metrics.errors.labels(kind=error.kind.value).inc()

        try:
            updated = update_status(
                read, conditions, write, what=f"ManagedClusterAddOn {namespace}/{name}",
                attempts=self._attempts, first=addon.as_object(name, namespace),
                on_conflict=conflicted,
            )  # fmt: skip
        except _NotLeader:
            return  # the next leader queues every cluster
        except KubeError as error:
            self._failed(namespace, error)
            return
        if updated.written and self._repairs.wrote(namespace, copy):
            self._metrics.repairs.inc()
            log.info(
                "ManagedClusterAddOn %s/%s: repaired a condition someone else changed",
                namespace, name, extra={"owned": [c["type"] for c in owned(copy)]},
            )  # fmt: skip
        self._succeeded(namespace)

    def _succeeded(self, namespace: str) -> None:
        self.queue.forget(namespace)
        self._contested.discard(namespace)
        if self._failing.pop(namespace, None) is not None:
            log.info("ManagedClusterAddOn %s/%s mirrored again", namespace, self.addon_name)

    def _contest(self, namespace: str) -> None:
        """Someone changes an owned condition again after it was repaired: left to them until
        the hub copy changes (two writers that each repair the other's write loop for ever)."""
        if namespace not in self._contested:
            self._contested.add(namespace)
            self._metrics.contested.inc()
            log.warning(
                "ManagedClusterAddOn %s/%s: another writer changed %s again after it was "
                "repaired; not written until the hub copy changes",
                namespace, self.addon_name, ", ".join(OWNED_TYPES),
            )  # fmt: skip

    def _failed(self, namespace: str, error: KubeError) -> None:
        """Queue `namespace` again after its backoff; the first failure of a kind is told, a
        refusal as a refusal."""
        self._metrics.errors.labels(kind=error.kind.value).inc()
        self.queue.add_rate_limited(namespace)
        if self._failing.get(namespace) is error.kind:
            return
        self._failing[namespace] = error.kind
        where = f"ManagedClusterAddOn {namespace}/{self.addon_name}"
        if error.kind is ErrorKind.NOT_FOUND:
            log.warning(
                "no %s (the addon is not enabled for cluster %s, or its CRD is not installed on "
                "the hub); trying again with backoff", where, namespace,
            )  # fmt: skip
        elif error.kind is ErrorKind.FORBIDDEN:
            log.warning(
                "the hub side is refused %s (403: its ClusterRole must name the "
                "ManagedClusterAddOn of --addon-name): %s; trying again with backoff",
                where, error.detail,
            )  # fmt: skip
        else:
            log.warning("cannot mirror onto %s (%s: %s)", where, error.kind, error.detail)

    # --- inside -----------------------------------------------------------------------------

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

    def _remember(self, namespace: str, found: Mapping[str, Any]) -> None:
        """What a read or a write answered, unless the watch already saw something newer."""
        addon = _Addon.of(found)
        with self._lock:
            known = self._addons.get(namespace)
            if known is None or not _newer(known.resource_version, addon.resource_version):
                self._addons[namespace] = addon

    def _is_cluster(self, namespace: str) -> bool:
        """Under `_lock`."""
        return self._clusters is not None and namespace in self._clusters


@dataclass(frozen=True, slots=True)
class _Addon:
    """What the hub side keeps of a ManagedClusterAddOn: its resourceVersion and conditions,
    not the whole object (the addon manager's part of its status is large, and a merge patch
    of the conditions needs nothing else)."""

    resource_version: str
    conditions: list[dict[str, Any]]

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> _Addon:
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
