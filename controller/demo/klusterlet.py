"""One cluster's klusterlet in the demo's model of Open Cluster Management (v1.3): what the spoke
side of OCM tells the hub, so that the hub's view of each cluster is made the way OCM makes it.

- Its registration agent says the cluster joined and is available (`ManagedClusterJoined`,
  `ManagedClusterConditionAvailable=True`, again whenever the hub says otherwise while it runs)
  and renews the cluster's Lease on the hub (`managed-cluster-lease`, `spec.renewTime`) every
  lease duration. The story's clock jumps, so the demo calls `renew(moment)` before each move
  of the clock: a running klusterlet would have renewed along the way, so it renews at the
  moment the clock is moved to whenever a lease duration has passed since its last renewal.
- Its work agent reports the addon's ManifestWork as applied and available, with the status
  feedback of each Deployment it applied (`ocm_model.feedback`), read from the spoke as it
  changes: what the hub's health check derives the addon's `Available` from.

A stopped klusterlet tells the hub nothing more: no renewal (after five lease durations the hub
calls the cluster lost), no feedback (the ManifestWork's status goes stale). It writes as the
hub's administrator (OCM gives it an identity of its own, which the demo does not model).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from controller.demo.ocm_model import (
    CLUSTER_AVAILABLE,
    DEFAULT_LEASE_SECONDS,
    LEASE,
    LEASE_NAME,
    MANAGED_CLUSTER,
    MANIFEST_WORK,
    feedback,
    manifest_meta,
    micro_time,
    set_condition,
    work_name,
)
from controller.hub.ocm import CLUSTER_LABEL
from controller.kube.api import ApiResource, Kube, NotFoundError
from controller.kube.controller import Controller, Result
from controller.kube.informer import Handlers, Informer
from controller.kube.reflector import Selection
from statemachines.config_file import guess_plural

__all__ = ["DEPLOYMENT", "Klusterlet"]

Obj = dict[str, Any]
DEPLOYMENT: Final = ApiResource("apps", "v1", "deployments", "Deployment")
_JOINED: Final = ("ManagedClusterJoined", "True", "ManagedClusterJoined", "Managed cluster joined")
_AVAILABLE: Final = (CLUSTER_AVAILABLE, "True", "ManagedClusterAvailable",
                     "Managed cluster is available")  # fmt: skip
_APPLIED: Final = ("Applied", "True", "AppliedManifestWorkComplete", "Apply manifest work complete")
_WORK_AVAILABLE: Final = ("Available", "True", "ResourcesAvailable", "All resources are available")


class Klusterlet:
    """Cluster `cluster`'s klusterlet between the hub (`hub`) and its spoke (`spoke`), whose
    agent is `manifests` (the addon's rendered manifests); see the module docstring.
    `start()` / `stop()` as often as the story wants; `running` says which."""

    def __init__(
        self,
        hub: Kube,
        spoke: Kube,
        *,
        cluster: str,
        addon: str,
        manifests: Sequence[Obj],
        now: Callable[[], datetime],
        lease_seconds: int = DEFAULT_LEASE_SECONDS,
    ) -> None:
        self._hub, self._spoke, self.cluster, self._now = hub, spoke, cluster, now
        self._work = work_name(addon)
        self._manifests = list(manifests)
        self._every = timedelta(seconds=lease_seconds)
        self._lock = threading.Lock()  # renewals come from the threads that move the clock
        self._renewed: datetime | None = None
        self.running = False
        self._parts: list[Controller[str] | Informer[Obj]] = []

    def _assemble(self) -> list[Controller[str] | Informer[Obj]]:
        """A loop and its informers, new for each start (a stopped loop is not reused)."""
        loop: Controller[str] = Controller(f"klusterlet-{self.cluster}", self._sync)
        queue = loop.queue.add
        spoke_namespaces = sorted({str(m["metadata"].get("namespace", "")) for m in
                                   self._manifests if m.get("kind") == "Deployment"})  # fmt: skip
        changed = Handlers[Obj](added=lambda key, new: queue("work"),
                                updated=lambda key, old, new: queue("work"),
                                deleted=lambda key, old: queue("work"))  # fmt: skip
        self.deployments = [
            Informer(self._spoke, Selection(DEPLOYMENT, namespace), name=f"work-{self.cluster}",
                     watch_seconds=60, handlers=changed)
            for namespace in spoke_namespaces
        ]  # fmt: skip
        self.work: Informer[Obj] = Informer(
            self._hub, Selection(MANIFEST_WORK, self.cluster, name=self._work),
            name=f"work-hub-{self.cluster}", watch_seconds=60, handlers=changed,
        )  # fmt: skip
        self.managed: Informer[Obj] = Informer(
            self._hub, Selection(MANAGED_CLUSTER, name=self.cluster),
            name=f"registration-{self.cluster}", watch_seconds=60,
            handlers=Handlers(added=lambda key, new: queue("status"),
                              updated=lambda key, old, new: queue("status")),
        )  # fmt: skip
        queue("status")
        return [loop, *self.deployments, self.work, self.managed]

    # --- running ---------------------------------------------------------------------------

    def start(self) -> None:
        with self._lock:
            if self.running:
                return
            self.running = True
        self._parts = self._assemble()
        for part in self._parts:
            part.start()
        self.renew(self._now())

    def stop(self) -> None:
        with self._lock:
            self.running = False
        for part in reversed(self._parts):
            part.stop()
        self._parts = []

    def renew(self, moment: datetime) -> None:
        """The clock is moving to `moment`: a running klusterlet renews its Lease when a lease
        duration has passed since it last did (or it never did)."""
        with self._lock:
            if not self.running:
                return
            if self._renewed is not None and moment - self._renewed < self._every:
                return
            self._renewed = moment
            renewal = {"spec": {"renewTime": micro_time(moment)}}
            try:  # one patch, not OCM's read and update: it runs on the thread moving the clock
                self._hub.patch(LEASE, self.cluster, LEASE_NAME, renewal)
            except NotFoundError:  # the hub's lease controller makes it; sooner here
                body = {"apiVersion": LEASE.api_version, "kind": LEASE.kind,
                        "metadata": {"name": LEASE_NAME, "namespace": self.cluster,
                                     "labels": {CLUSTER_LABEL: self.cluster}},
                        "spec": {"holderIdentity": LEASE_NAME, **renewal["spec"]}}  # fmt: skip
                self._hub.create(LEASE, self.cluster, body)

    # --- what it tells the hub ---------------------------------------------------------------

    def _sync(self, key: str) -> Result | None:
        if key == "status":
            self._status()
        else:
            self._feedback()
        return None

    def _status(self) -> None:
        cluster = self.managed.get(self.cluster)
        if cluster is None:
            return
        conditions = list((cluster.get("status") or {}).get("conditions") or [])
        wanted = set_condition(conditions, _JOINED, self._now())
        wanted = set_condition(wanted, _AVAILABLE, self._now())
        if wanted != conditions:
            patch = {"metadata": {"resourceVersion": cluster["metadata"]["resourceVersion"]},
                     "status": {"conditions": wanted}}  # fmt: skip
            self.managed.remember(self._hub.patch_status(MANAGED_CLUSTER, "", self.cluster,
                                                         patch))  # fmt: skip

    def _feedback(self) -> None:
        """The ManifestWork's status as the work agent reports it from the spoke."""
        work = self.work.get(f"{self.cluster}/{self._work}")
        if work is None:
            return  # not sent yet: its watch brings it
        found = {key: d for informer in self.deployments for key, d in informer.items().items()}
        manifests = []
        for ordinal, manifest in enumerate(self._manifests):
            meta = manifest_meta(manifest, ordinal, guess_plural(str(manifest.get("kind", ""))))
            entry: Obj = {"resourceMeta": meta, "conditions": []}
            if manifest.get("kind") == "Deployment":
                live = found.get(f"{meta['namespace']}/{meta['name']}")
                entry["statusFeedback"] = {"values": feedback(live or {})}
            manifests.append(entry)
        status = work.get("status") or {}
        conditions = list(status.get("conditions") or [])
        wanted = set_condition(conditions, _APPLIED, self._now())
        wanted = set_condition(wanted, _WORK_AVAILABLE, self._now())
        new = {"conditions": wanted, "resourceStatus": {"manifests": manifests}}
        if {"conditions": conditions, "resourceStatus": status.get("resourceStatus")} == new:
            return
        patch = {"metadata": {"resourceVersion": work["metadata"]["resourceVersion"]},
                 "status": new}  # fmt: skip
        self.work.remember(self._hub.patch_status(MANIFEST_WORK, self.cluster, self._work, patch))
