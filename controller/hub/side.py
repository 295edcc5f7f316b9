"""The hub side: mirrors each cluster's hub copy of the addon onto its `ManagedClusterAddOn`
(section 12 of the rules; the rule itself is `controller.hub.mirror.mirror`).

Three threads. Two watches, as client-go's informers keep a cache: one lists and watches the
hub copies (`ObservabilityAddon` named `copy_name`) in every namespace at once, and keeps the
standard conditions of each; the other the `ManagedClusterAddOn`s named `addon_name`, and keeps
each one's resourceVersion and conditions (the one list-then-watch loop,
`controller.kube.reflector`). A copy whose standard conditions changed, or a
`ManagedClusterAddOn` whose conditions someone else changed, queues its namespace. The worker
takes queued namespaces one at a time and mirrors through the one status-update loop
(`controller.kube.update.update_status`), starting from the cached `ManagedClusterAddOn`: the
pure mirror, and only when something differs a JSON merge patch of its status conditions with
the cached resourceVersion as precondition; a fresh read only after a 409. A resync therefore
reads nothing: it compares the two caches.

A namespace whose mirror failed (no `ManagedClusterAddOn` yet, the hub unreachable, ...) is
queued again after a full-jitter backoff of its own (`controller.kube.backoff`), so one cluster
without its `ManagedClusterAddOn` never delays the others. Every `resync_interval` every known
namespace is queued, which repairs a `ManagedClusterAddOn` someone else changed (and refreshes
the namespaces the label selector picks). Only the leader writes (`Role.may_write()`, asked
again right before every PUT); a replica that becomes leader queues every namespace, since
what the previous leader left undone is unknown.
"""

from __future__ import annotations

import heapq
import logging
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import (
    MANAGED_CLUSTER_ADDON,
    ClusterState,
    cluster_state,
    mirror,
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
from controller.kube.backoff import Backoff, Retry
from controller.kube.reflector import Reflector, Selection, WatchMetrics
from controller.kube.update import update_status
from controller.ops.role import Role

__all__ = ["HubSide"]

log = logging.getLogger(__name__)

_MAX_WAIT = 1.0


class _NotLeader(Exception):  # noqa: N818 - a signal, not an error
    """Leadership ended between the read and the write."""


class HubSide:
    """Mirrors hub copies onto `ManagedClusterAddOn`s through `kube` (the hub); `start()` and
    `stop()` its two threads. See the module docstring."""

    def __init__(
        self,
        kube: Kube,
        *,
        metrics: MirrorMetrics,
        role: Role | None = None,
        addon_name: str = "observability-controller",
        copy_name: str = "observability-addon",
        namespace_selector: str = "",
        resync_interval: float = 300.0,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
        watch_metrics: WatchMetrics | None = None,
        addon_watch_metrics: WatchMetrics | None = None,
        conflict_retries: int = 5,
    ) -> None:
        self._kube, self._metrics = kube, metrics
        self._role = role or Role()
        self.addon_name, self.copy_name = addon_name, copy_name
        self._selector = namespace_selector
        self._resync = resync_interval
        self._backoff = backoff or Backoff(initial=0.5, maximum=60.0)
        self._attempts = max(conflict_retries, 1)
        self._wake = threading.Condition()
        self._stopping = threading.Event()
        self._worker: threading.Thread | None = None
        self.reflector = Reflector(
            kube,
            Selection(ADDON, ALL_NAMESPACES, name=copy_name),
            name="hub-copies",
            on_listed=self._listed,
            on_event=self._changed,
            on_failed=lambda error: self._metrics.errors.labels(kind=error.kind.value).inc(),
            metrics=watch_metrics,
            backoff=self._backoff,
            watch_seconds=watch_seconds,
        )
        self.addon_reflector = Reflector(
            kube,
            Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name),
            name="managed-cluster-addons",
            on_listed=self._addons_listed,
            on_event=self._addon_changed,
            on_failed=self._addons_failed,
            metrics=addon_watch_metrics,
            backoff=self._backoff,
            watch_seconds=watch_seconds,
        )
        # Guarded by `_wake`:
        self._addons: dict[str, _Addon] = {}  # namespace -> its ManagedClusterAddOn, as last seen
        self._addons_known = False  # listed once, or failed to: the worker may look them up
        self._copies: dict[str, list[dict[str, Any]]] = {}  # namespace -> standard conditions
        self._selected: frozenset[str] | None = None if not namespace_selector else frozenset()
        self._due: dict[str, float] = {}
        self._heap: list[tuple[float, str]] = []
        self._next_resync = 0.0
        self._listed_once = False
        self._busy = False
        # Only the worker touches these:
        self._retries: dict[str, Retry] = {}
        self._failing: dict[str, ErrorKind] = {}
        # The watch's thread only: what each malformed copy held, as last told.
        self._malformed: dict[str, list[str]] = {}

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._stopping.clear()
        self._worker = threading.Thread(target=self._work_run, name="hub-mirror", daemon=True)
        self._worker.start()
        self.addon_reflector.start()
        self.reflector.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop both threads, waiting up to `timeout` for a hub call in progress to end."""
        self._stopping.set()
        with self._wake:
            self._wake.notify_all()
        deadline = time.monotonic() + timeout
        self.reflector.stop(timeout)
        self.addon_reflector.stop(max(deadline - time.monotonic(), 0.0))
        if self._worker is not None:
            self._worker.join(max(deadline - time.monotonic(), 0.0))
        if self._worker is not None and self._worker.is_alive():
            log.warning("the hub side is still inside a hub call; it ends with it")

    def resync(self) -> None:
        """Queue every namespace now (leadership gained; a test)."""
        with self._wake:
            self._next_resync = 0.0
            self._wake.notify_all()

    # --- what probes and tests look at ---------------------------------------------------------

    @property
    def alive(self) -> bool:
        worker = self._worker
        watches = self.reflector.alive and self.addon_reflector.alive
        return worker is not None and worker.is_alive() and watches

    @property
    def synced(self) -> bool:
        """The hub copies were listed at least once."""
        with self._wake:
            return self._listed_once

    def wait_idle(self, timeout: float) -> bool:
        """Block until listed and nothing is due or in progress (a backoff still pending counts
        as idle); False on timeout."""

        def idle() -> bool:
            now = time.monotonic()
            return (
                self._listed_once
                and not self._busy
                and self._next_resync > now
                and all(due > now for due in self._due.values())
            )

        with self._wake:
            return self._wake.wait_for(idle, timeout)

    # --- the watch's hooks ----------------------------------------------------------------------

    def _listed(self, items: list[dict[str, Any]], version: str) -> None:
        copies = {_namespace(item): self._standard(item) for item in items}
        with self._wake:
            for namespace, conditions in copies.items():
                if self._copies.get(namespace) != conditions:
                    self._enqueue(namespace)
            self._copies = copies
            self._listed_once = True
            self._wake.notify_all()

    def _changed(self, event: WatchEvent) -> None:
        obj = event.object
        namespace = _namespace(obj)
        with self._wake:
            if event.type == "DELETED":
                self._copies.pop(namespace, None)  # the ManagedClusterAddOn keeps the last word
            else:
                conditions = self._standard(obj)
                if self._copies.get(namespace) == conditions:
                    return
                self._copies[namespace] = conditions
                self._enqueue(namespace)
            self._wake.notify_all()

    def _addons_listed(self, items: list[dict[str, Any]], version: str) -> None:
        addons = {_namespace(item): _Addon.of(item) for item in items}
        with self._wake:
            for namespace, addon in addons.items():
                known = self._addons.get(namespace)
                if known is None or known.conditions != addon.conditions:
                    self._enqueue(namespace)
            self._addons = addons
            self._addons_known = True
            self._wake.notify_all()

    def _addons_failed(self, error: KubeError) -> None:
        self._metrics.errors.labels(kind=error.kind.value).inc()
        with self._wake:  # without their list (no CRD, no grant), each cluster says so itself
            self._addons_known = True
            self._wake.notify_all()

    def _addon_changed(self, event: WatchEvent) -> None:
        namespace = _namespace(event.object)
        with self._wake:
            if event.type == "DELETED":
                self._addons.pop(namespace, None)
                return
            addon = _Addon.of(event.object)
            known = self._addons.get(namespace)
            if known is not None and _newer(known.resource_version, addon.resource_version):
                return  # our own write's answer was newer than this event
            self._addons[namespace] = addon
            if known is None or known.conditions != addon.conditions:
                self._enqueue(namespace)  # a new one, or someone else changed it: look
                self._wake.notify_all()

    # --- the worker ----------------------------------------------------------------------------

    def _work_run(self) -> None:
        while (namespace := self._next()) is not None:
            try:
                if namespace:
                    self._mirror(namespace)
                else:
                    self._refresh_selection()
            except Exception:  # a bug must not end the only worker
                log.exception("mirroring %s failed unexpectedly", namespace or "the selection")
                self._retry(namespace, ErrorKind.OTHER)
            finally:
                with self._wake:
                    self._busy = False
                    self._wake.notify_all()

    def _next(self) -> str | None:
        """The next namespace due ("" for a refresh of the selection); None once stopping."""
        with self._wake:
            while not self._stopping.is_set():
                now = time.monotonic()
                if self._role.may_write() and self._listed_once and self._addons_known:
                    if self._next_resync <= now:
                        self._next_resync = now + self._resync
                        if self._selector:
                            self._busy = True
                            return ""
                        self._enqueue_all(now)
                    while self._heap and self._due.get(self._heap[0][1]) != self._heap[0][0]:
                        heapq.heappop(self._heap)  # superseded
                    if self._heap and self._heap[0][0] <= now:
                        _, namespace = heapq.heappop(self._heap)
                        del self._due[namespace]
                        self._busy = True
                        return namespace
                    wait = (
                        min(self._heap[0][0] if self._heap else now + _MAX_WAIT, self._next_resync)
                        - now
                    )
                else:
                    wait = _MAX_WAIT
                self._wake.wait(min(max(wait, 0.0), _MAX_WAIT))
            return None

    def _enqueue(self, namespace: str, at: float | None = None) -> None:
        """Queue `namespace` (under `_wake`); one already queued keeps its time, so a change
        of the copy does not cut a backoff short."""
        if namespace in self._due:
            return
        due = time.monotonic() if at is None else at
        self._due[namespace] = due
        heapq.heappush(self._heap, (due, namespace))

    def _enqueue_all(self, now: float) -> None:
        for namespace in self._copies:
            self._enqueue(namespace, now)

    def _refresh_selection(self) -> None:
        """The namespaces the label selector picks, then every namespace queued."""
        try:
            listed = self._kube.list(NAMESPACE, ALL_NAMESPACES, label_selector=self._selector)
        except KubeError as error:
            self._metrics.errors.labels(kind=error.kind.value).inc()
            log.warning("cannot list the namespaces %r: %s", self._selector, error.detail)
            with self._wake:
                self._next_resync = time.monotonic() + self._backoff.delay(1)
            return
        names = frozenset(str(item["metadata"]["name"]) for item in listed.get("items") or [])
        with self._wake:
            self._selected = names
            self._enqueue_all(time.monotonic())

    def _mirror(self, namespace: str) -> None:
        name = self.addon_name
        with self._wake:
            if namespace not in self._copies or not self._picked(namespace):
                return
            addon = self._addons.get(namespace)
        if addon is None:
            self._metrics.errors.labels(kind=ErrorKind.NOT_FOUND.value).inc()
            # Looked for again with backoff; its watch event queues it as soon as it appears.
            self._retry(namespace, ErrorKind.NOT_FOUND)
            return

        def conditions(status: Mapping[str, Any]) -> dict[str, Any] | None:
            with self._wake:
                copy = self._copies.get(namespace, [])
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
            update_status(
                read,
                conditions,
                write,
                what=f"ManagedClusterAddOn {namespace}/{name}",
                attempts=self._attempts,
                first=addon.as_object(name, namespace),
                on_conflict=conflicted,
            )
        except _NotLeader:
            return  # the next leader queues every namespace
        except KubeError as error:
            self._metrics.errors.labels(kind=error.kind.value).inc()
            self._retry(namespace, error.kind, error.detail)
            return
        self._retries.pop(namespace, None)
        if self._failing.pop(namespace, None) is not None:
            log.info("ManagedClusterAddOn %s/%s mirrored again", namespace, name)

    def _retry(self, namespace: str, kind: ErrorKind, detail: str = "") -> None:
        """Queue `namespace` again after its backoff; the first failure of a kind is told."""
        if not namespace:
            with self._wake:
                self._next_resync = time.monotonic() + self._backoff.delay(1)
            return
        retry = self._retries.setdefault(namespace, Retry(self._backoff))
        delay = retry.failed()
        if self._failing.get(namespace) is not kind:
            self._failing[namespace] = kind
            if kind is ErrorKind.NOT_FOUND:
                log.warning(
                    "no ManagedClusterAddOn %s/%s (the addon is not enabled for cluster %s, "
                    "or its CRD is not installed on the hub); trying again with backoff",
                    namespace,
                    self.addon_name,
                    namespace,
                )
            else:
                log.warning(
                    "cannot mirror onto ManagedClusterAddOn %s/%s (%s: %s)",
                    namespace,
                    self.addon_name,
                    kind,
                    detail,
                )
        with self._wake:
            self._enqueue(namespace, time.monotonic() + delay)
            self._wake.notify_all()

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
        with self._wake:
            known = self._addons.get(namespace)
            if known is None or not _newer(known.resource_version, addon.resource_version):
                self._addons[namespace] = addon

    def cluster_states(self) -> list[ClusterState]:
        """Each cluster the selection picks, as its hub copy was last seen (for the metrics)."""
        with self._wake:
            copies = {n: c for n, c in self._copies.items() if self._picked(n)}
        return [cluster_state(namespace, copies[namespace]) for namespace in sorted(copies)]

    def _picked(self, namespace: str) -> bool:
        return self._selected is None or namespace in self._selected


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
