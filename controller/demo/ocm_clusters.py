"""The hub's registration of ManagedClusters in the demo's model of Open Cluster Management
(v1.3), a part of `ocm_writers.OcmWriters` on the same loop: an accepted cluster is
`HubAcceptedManagedCluster=True`, and the lease controller watches each accepted cluster's
Lease (`managed-cluster-lease` in its namespace, renewed by its klusterlet): once it has not
been renewed for five lease durations the cluster's `ManagedClusterConditionAvailable` turns
`Unknown` (`ManagedClusterLeaseUpdateStopped`), and `lost()` says so to the MCAs' health check,
which copies it onto each of them. The cluster comes back when its klusterlet says so (it sets
`ManagedClusterConditionAvailable=True` itself, `klusterlet.Klusterlet`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from datetime import datetime, timedelta
from typing import Any, Final

from controller.demo.ocm_model import (
    CLUSTER_AVAILABLE,
    CLUSTER_LOST,
    DEFAULT_LEASE_SECONDS,
    GRACE_LEASES,
    LEASE,
    LEASE_NAME,
    MANAGED_CLUSTER,
    Wanted,
    condition,
    lease_expires,
    micro_time,
    set_condition,
)
from controller.hub.ocm import CLUSTER_LABEL
from controller.kube.api import ALL_NAMESPACES, ConflictError, Kube, NotFoundError
from controller.kube.controller import Result
from controller.kube.informer import Handlers, Informer
from controller.kube.reflector import Selection
from controller.kube.workqueue import WorkQueue

__all__ = ["ClusterRegistration"]

Obj = dict[str, Any]
_ACCEPTED: Final = ("HubAcceptedManagedCluster", "True", "HubClusterAdminAccepted",
                    "Accepted by hub cluster admin")  # fmt: skip


class ClusterRegistration:
    """See the module docstring. Its informers run with the writers'; `sync("name")` is the
    key `cluster/name` of their loop, and every change of a cluster queues its MCA too."""

    def __init__(
        self,
        kube: Kube,
        *,
        now: Callable[[], datetime],
        queue: WorkQueue[str],
        watch_seconds: int,
        wrote: Callable[[], None],
        listed: Callable[[str], None],
    ) -> None:
        self._kube, self._now, self._queue, self._wrote = kube, now, queue, wrote
        self.clusters: Informer[Obj] = Informer(
            kube, Selection(MANAGED_CLUSTER), name="ocm-clusters", watch_seconds=watch_seconds,
            handlers=Handlers(added=lambda key, new: self._changed(key),
                              updated=lambda key, old, new: self._changed(key), listed=listed),
        )  # fmt: skip
        self.leases: Informer[Obj] = Informer(
            kube, Selection(LEASE, ALL_NAMESPACES, name=LEASE_NAME), name="ocm-leases",
            watch_seconds=watch_seconds, handlers=Handlers(
                added=lambda key, new: queue.add(f"cluster/{key.partition('/')[0]}"),
                updated=lambda key, old, new: queue.add(f"cluster/{key.partition('/')[0]}"),
                listed=listed,
            ),
        )  # fmt: skip
        self.informers = [self.clusters, self.leases]

    def _changed(self, name: str) -> None:
        self._queue.add(f"cluster/{name}")
        self._queue.add(name)  # the MCA in the cluster's namespace: lost or back

    def lost(self, name: str) -> tuple[str, str, str] | None:
        """The cluster's Unknown availability (status, reason, message) while it is lost."""
        cluster = self.clusters.get(name) or {}
        found = condition((cluster.get("status") or {}).get("conditions"), CLUSTER_AVAILABLE)
        if found.get("status") != "Unknown":
            return None
        return ("Unknown", str(found.get("reason", "")), str(found.get("message", "")))

    def sync(self, name: str) -> Result | None:
        cluster = self.clusters.get(name)
        if cluster is None:
            return None
        now = self._now()
        wanted: list[Wanted] = []
        if (cluster.get("spec") or {}).get("hubAcceptsClient"):
            wanted.append(_ACCEPTED)
        accepted = wanted or condition(_conditions(cluster), _ACCEPTED[0])
        if not accepted:
            return None  # never accepted: no lease to watch
        lease = self.leases.get(f"{name}/{LEASE_NAME}")
        expires = None if lease is None else lease_expires(lease, cluster)
        if expires is not None and expires <= now:
            # The story's clock jumps: a cache a moment behind the klusterlet's last renewal
            # would call a live cluster lost. Read the Lease itself before saying so.
            lease = self._read_lease(name)
            expires = None if lease is None else lease_expires(lease, cluster)
        if lease is None:
            self._create_lease(name, now)
            expires = now + _grace(cluster)
        elif (
            expires is not None
            and expires <= now
            and condition(_conditions(cluster), CLUSTER_AVAILABLE).get("status") != "Unknown"
        ):
            wanted.append(CLUSTER_LOST)
        self._write(name, cluster, wanted)
        if expires is None or expires <= now:
            return Result(requeue_after=_grace(cluster).total_seconds())
        return Result(requeue_after=(expires - now).total_seconds())

    def _read_lease(self, name: str) -> Obj | None:
        try:
            return self._kube.get(LEASE, name, LEASE_NAME)
        except NotFoundError:
            return None

    def _create_lease(self, name: str, now: datetime) -> None:
        """As OCM's lease controller: an accepted cluster without a Lease gets one."""
        body = {"apiVersion": LEASE.api_version, "kind": LEASE.kind,
                "metadata": {"name": LEASE_NAME, "namespace": name,
                             "labels": {CLUSTER_LABEL: name}},
                "spec": {"holderIdentity": LEASE_NAME, "renewTime": micro_time(now)}}  # fmt: skip
        # made meanwhile, or no namespace yet: the next sync looks again
        with suppress(ConflictError, NotFoundError):
            self.leases.remember(self._kube.create(LEASE, name, body))

    def _write(self, name: str, cluster: Obj | None, wanted: list[Wanted]) -> None:
        for _ in range(5):
            if cluster is None:
                try:
                    cluster = self._kube.get(MANAGED_CLUSTER, "", name)
                except NotFoundError:
                    return
            conditions = _conditions(cluster)
            result = conditions
            for one in wanted:
                result = set_condition(result, one, self._now())
            if result == conditions:
                return
            patch = {"metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]},
                     "status": {"conditions": result}}  # fmt: skip
            try:
                written = self._kube.patch_status(MANAGED_CLUSTER, "", name, patch)
            except ConflictError:
                cluster = None
                continue
            self.clusters.remember(written)
            self._wrote()
            return


def _conditions(obj: Obj) -> list[Obj]:
    return list((obj.get("status") or {}).get("conditions") or [])


def _grace(cluster: Obj) -> timedelta:
    seconds = (cluster.get("spec") or {}).get("leaseDurationSeconds") or DEFAULT_LEASE_SECONDS
    return timedelta(seconds=GRACE_LEASES * int(seconds))
