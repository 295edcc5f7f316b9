"""The hub side: mirrors the conditions it owns from each cluster's hub copy onto the cluster's
`ManagedClusterAddOn` (docs/spec.md §12; the rule itself is `controller.hub.mirror`), with
`Degraded` as OCM's view of the path decides when it is broken (§12.2, `controller.hub.path`),
and keeps the console's link (§12.4, `controller.hub.link`). Shaped as a client-go controller:
informer caches (`controller.hub.caches`), a work queue, one `sync(namespace)`.

The worker waits until the caches are filled, then syncs one namespace at a time: the pure
mirror from the cached `ManagedClusterAddOn`, and only when an owned condition differs and
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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from controller.hub.access import AccessReviews
from controller.hub.caches import Addon, HubCaches, Snapshot, Watches
from controller.hub.lease_notes import resync_notes
from controller.hub.link import ConsoleLink, link_patch
from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import (
    MANAGED_CLUSTER_ADDON,
    ClusterState,
    Repairs,
    cluster_state,
    from_newer_copy,
    mirror,
    owned,
    standard_conditions,
)
from controller.hub.path import PATH_REASONS, STATUS_NOT_REPLICATED, effective
from controller.hub.told import Told
from controller.hub.writers import Writers, degraded_by
from controller.kube.api import (
    ADDON,
    ApiResource,
    ConflictError,
    Kube,
    KubeError,
    NotFoundError,
)
from controller.kube.backoff import Backoff
from controller.kube.controller import Controller, Result
from controller.kube.ratelimit import default_rate_limiter
from controller.kube.update import update_status
from controller.kube.workqueue import QueueMetrics
from controller.ops.role import Role
from statemachines.object_names import ADDON_CR, MANAGED_ADDON

__all__ = ["HubSide", "PathSettings", "Watches"]

log = logging.getLogger(__name__)

_RESYNC: Final = ""  # the queue's key for "queue every cluster"
_CONFIRM: Final = 5.0
"""Seconds after writing that an agent may not write its copy, the access review is asked
again: the write itself is the change on which OCM re-creates a missing RoleBinding (measured on
OCM v1.3: 26 to 285 ms after it), so a verdict OCM has lifted goes within seconds, not a window."""


class _NotLeader(Exception):  # noqa: N818 - a signal, not an error
    """Leadership ended between the read and the write."""


@dataclass(frozen=True, slots=True)
class PathSettings:
    """How OCM's view of each cluster's path is read (docs/spec.md §12.2) and the console's
    link kept (§12.4)."""

    window: timedelta = timedelta(minutes=2)
    grace: timedelta = timedelta(minutes=10)
    access_interval: timedelta = timedelta(minutes=20)  # 0: never asked
    access_rate: float = 10.0
    agent_addon: str = ""  # the agent's ManagedClusterAddOn (empty: the one written)
    link: ConsoleLink = field(default_factory=ConsoleLink)


class HubSide:
    """Mirrors hub copies onto `ManagedClusterAddOn`s through `kube` (the hub); `start()` and
    `stop()` its threads. See the module docstring."""

    def __init__(
        self,
        kube: Kube,
        *,
        metrics: MirrorMetrics,
        role: Role | None = None,
        addon_name: str = MANAGED_ADDON,
        copy_name: str = ADDON_CR,
        namespace_selector: str = "",
        resync_interval: float = 300.0,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
        watches: Watches | None = None,
        conflict_retries: int = 2,
        queue_metrics: QueueMetrics | None = None,
        path: PathSettings | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        copy_resource: ApiResource = ADDON,
    ) -> None:
        self._kube, self._metrics, self._now = kube, metrics, clock
        self.copy_resource = copy_resource
        self._path = path = path or PathSettings()
        self._role = role or Role()
        self.addon_name, self.copy_name = addon_name, copy_name
        self._resync = resync_interval
        self._attempts = max(conflict_retries, 1)
        backoff = backoff or Backoff(initial=0.5, maximum=60.0)
        self.loop: Controller[str] = Controller(
            "hub-mirror", self._sync_key, rate_limiter=default_rate_limiter(backoff),
            metrics=queue_metrics, held=True,
        )  # fmt: skip
        self.queue = self.loop.queue
        self._synced = threading.Event()
        self.caches = HubCaches(
            kube, addon_name=addon_name, copy_name=copy_name,
            namespace_selector=namespace_selector, metrics=metrics, changed=self.queue.add,
            synced=self._caches_synced, backoff=backoff, watch_seconds=watch_seconds,
            watches=watches or Watches(), clock=clock, agent_addon=path.agent_addon,
            copy_resource=copy_resource,
        )  # fmt: skip
        self._access = AccessReviews(
            kube, addon=path.agent_addon or addon_name, copy_name=copy_name,
            interval=path.access_interval.total_seconds(), rate=path.access_rate, now=clock,
            recheck=path.window.total_seconds(), resource=copy_resource,
        )  # fmt: skip
        self._paths: dict[str, str] = {}  # namespace -> the path reason its Degraded holds
        self._writers = Writers(copy_name)
        # Only the worker touches these:
        self._repairs = Repairs()
        self._told = Told(addon_name, metrics)
        self.resynced: datetime | None = None  # when the worker last queued every cluster

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self.loop.start()
        for informer in self.caches.informers:
            informer.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every thread, waiting up to `timeout` for each (a hub call in progress ends
        with its own timeout)."""
        self.loop.stop(timeout)
        for informer in self.caches.informers:
            informer.stop(timeout)

    def resync(self) -> None:
        """Queue every cluster now (leadership gained; a test)."""
        self.queue.add(_RESYNC)

    # --- what probes and tests look at ---------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self.loop.alive and all(i.alive for i in self.caches.informers)

    def problems(self, stuck_after: float) -> list[str]:
        """The loop died or is stuck in a sync, or an informer died (liveness)."""
        found = self.loop.problems(stuck_after)
        return found + [p for i in self.caches.informers for p in i.problems(stuck_after)]

    @property
    def synced(self) -> bool:
        """The clusters and their hub copies were listed at least once."""
        return self.caches.listed

    def wait_idle(self, timeout: float) -> bool:
        """Block until synced and nothing is queued or in progress (a retry waiting for its
        backoff counts as idle); False on timeout."""
        return self._synced.wait(timeout) and self.queue.wait_idle(timeout)

    def cluster_states(self) -> list[ClusterState]:
        """Each cluster, as its hub copy was last seen (for the metrics)."""
        copies = self.caches.clusters_with_copies()
        return [cluster_state(namespace, copies[namespace]) for namespace in sorted(copies)]

    def lease_notes(self) -> dict[str, str]:
        """The last resync, for the Lease the leader holds (`controller.hub.lease_notes`)."""
        return resync_notes(self.resynced, self._resync)

    def path_reasons(self) -> dict[str, str]:
        """Each cluster whose `Degraded` OCM's view decides, with its reason (for the
        metrics)."""
        return dict(self._paths)

    # --- the worker ----------------------------------------------------------------------------

    def _caches_synced(self) -> None:
        if not self._synced.is_set():
            self._synced.set()
            self.loop.release()
            self.queue.add_after(_RESYNC, self._resync)

    def _sync_key(self, namespace: str) -> Result | None:
        if namespace == _RESYNC:
            for each in self.caches.namespaces():
                self.queue.add(each)
            self.resynced = datetime.now(UTC)  # wall time, as `check hub` reads it
            return Result(requeue_after=self._resync)
        if self._role.may_write():
            return self.sync(namespace)
        return None

    def sync(self, namespace: str) -> Result | None:
        """Bring `namespace`'s ManagedClusterAddOn in line with its hub copy and OCM's view
        (the loop's one step; a failure goes back on the queue with that namespace's backoff,
        a break of the path not yet counted comes back when its window ends)."""
        try:
            mirrored, later = self._mirror(namespace)
        except _NotLeader:
            return None  # the next leader queues every cluster
        except KubeError as error:
            return self._told.failed(namespace, error)
        if mirrored:
            self._told.succeeded(namespace)
        return None if later is None else Result(requeue_after=max(later, 0.0))

    def _mirror(self, namespace: str) -> tuple[bool, float | None]:
        """(True when the ManagedClusterAddOn says what it should, written now or already;
        False when it is left as it is for now, the seconds until it must be looked at again)."""
        name = self.addon_name
        found = self.caches.snapshot(namespace)
        addon = found.addon if found is not None else None
        if addon is None:  # no row in the console: no path verdict either
            self._paths.pop(namespace, None)
        if found is None:
            return False, None
        if addon is None:
            if found.copy is None:
                return False, None
            raise found.refused or NotFoundError(
                f"no ManagedClusterAddOn {namespace}/{name}", status=404
            )
        wanted, later = self._wanted(namespace, found)
        self._link(namespace, addon)
        if mirror(wanted, addon.conditions) is None:
            return True, later
        if not addon.owned:  # a new ManagedClusterAddOn (OCM made it again): a first write
            self._repairs.forget(namespace)
        if self._left(namespace, found.copy or [], wanted, addon):
            return False, later

        def conditions(status: Mapping[str, Any]) -> dict[str, Any] | None:
            new = mirror(wanted, status.get("conditions") or [])
            return None if new is None else {**status, "conditions": new}

        def read() -> dict[str, Any]:
            current = self._kube.get(MANAGED_CLUSTER_ADDON, namespace, name)
            self.caches.remember(current)
            return current

        def write(body: dict[str, Any]) -> dict[str, Any]:
            if not self._role.may_write():
                raise _NotLeader
            patch = {
                "metadata": {"resourceVersion": body["metadata"]["resourceVersion"]},
                "status": {"conditions": body["status"]["conditions"]},
            }
            stored = self._kube.patch_status(MANAGED_CLUSTER_ADDON, namespace, name, patch)
            self._metrics.writes.inc()
            self.caches.remember(stored)
            return stored

        def conflicted(attempt: int, error: ConflictError) -> None:
            self._metrics.errors.labels(kind=error.kind.value).inc()
            self._metrics.conflicts_lost.inc()
            log.info(
                "ManagedClusterAddOn %s/%s: lost a write to another writer (409); reading it "
                "once and writing at most once more", namespace, name,
            )  # fmt: skip

        try:
            updated = update_status(
                read, conditions, write, what=f"ManagedClusterAddOn {namespace}/{name}",
                attempts=self._attempts, first=addon.as_object(name, namespace),
                on_conflict=conflicted,
            )  # fmt: skip
        except ConflictError:
            self._metrics.conflicts_lost.inc()
            raise
        if updated.written and self._repairs.wrote(namespace, wanted):
            self._metrics.repairs.inc()
            log.info(
                "ManagedClusterAddOn %s/%s: repaired a condition someone else changed",
                namespace, name, extra={"owned": [c["type"] for c in owned(wanted)]},
            )  # fmt: skip
        return True, later

    def _wanted(self, namespace: str, found: Snapshot) -> tuple[list[dict[str, Any]], float | None]:
        """The conditions to mirror (the copy's, `Degraded` as OCM's view decides), and the
        seconds until the view must be looked at again (a window's end, the next access
        review)."""
        asked = self._access.check(namespace)
        access = self._access
        view = replace(
            found.view, denied=access.denied(namespace), may_write=access.allowed(namespace)
        )
        now, path = self._now(), self._path
        wanted, again = effective(
            namespace, found.copy, view, now, window=path.window, grace=path.grace,
            copy_changed=found.copy_changed,
        )  # fmt: skip
        reason = next((c["reason"] for c in wanted if c.get("reason") in PATH_REASONS), None)
        before = self._paths.pop(namespace, None) if reason is None else self._paths.get(namespace)
        if reason is not None:
            self._paths[namespace] = reason
        if before != reason:
            log.info(
                "cluster %s: %s", namespace,
                f"Degraded from OCM's view of the path: {reason}" if reason
                else "the path holds again: the hub copy's Degraded",
            )  # fmt: skip
        waits = [asked] if asked is not None else []
        writers = self._writers.held(namespace, found.writers, now)
        if writers:  # the copy is not the agent's word alone: Degraded says so, nothing fought
            wanted = degraded_by(writers, wanted, self.copy_name, now)
            if (until := self._writers.until(namespace)) is not None:
                again = until if again is None else min(again, until)
        if reason == STATUS_NOT_REPLICATED and before != reason:
            confirm = access.soon(namespace, _CONFIRM)
            waits += [confirm] if confirm is not None else []
        if again is not None:
            waits.append((again - now).total_seconds())
        return wanted, min(waits, default=None)

    def _link(self, namespace: str, addon: Addon) -> None:
        """The console's link on the ManagedClusterAddOn, as `--console-link` says."""
        patch = link_patch(self._path.link, namespace, addon.annotations)
        if patch is None:
            return
        if not self._role.may_write():
            raise _NotLeader
        current = self.caches.addons.get(f"{namespace}/{self.addon_name}") or addon
        patch["metadata"]["resourceVersion"] = current.resource_version
        stored = self._kube.patch(
            MANAGED_CLUSTER_ADDON, namespace, self.addon_name, patch, merge=True
        )
        self.caches.remember(stored)

    def _left(
        self,
        namespace: str,
        copy: list[dict[str, Any]],
        wanted: list[dict[str, Any]],
        addon: Addon,
    ) -> bool:
        """Not written now: a newer copy is on its way, or another writer is left alone
        (`Repairs`)."""
        if from_newer_copy(wanted, addon.conditions) and self._copy_moved_on(namespace, copy):
            return True  # the copy's own watch event brings it, and a sync with it
        if not self._repairs.due(namespace, wanted):
            self._told.contest(namespace)
            return True
        return False

    def _copy_moved_on(self, namespace: str, copy: list[dict[str, Any]]) -> bool:
        """Whether the hub copy, read now, says something else than the cache's `copy`: a
        writer with a faster watch copied a newer one, which must not be written over with
        the older (a flap of the condition the console reads)."""
        try:
            current = self._kube.get(self.copy_resource, namespace, self.copy_name)
        except NotFoundError:
            return True  # deleted: its watch event comes too
        status = current.get("status")
        conditions = status.get("conditions") if isinstance(status, Mapping) else None
        return standard_conditions(conditions) != copy
