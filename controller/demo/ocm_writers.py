"""The controllers of Open Cluster Management (v1.3) and ACM that write a ManagedClusterAddOn's
conditions, as they write them, so that the demo and the tests run the hub side beside them
(docs/spec.md §12.1; in a real fleet OCM does this; the project never does):

- the addon manager's `addonprogressing` controller, on every event of a ManagedClusterAddOn:
  `Progressing=False`, reason `Completed`, "completed with no errors." once the manifests are
  applied;
- the health check: template addons are fixed to workload availability (`Available=True`,
  `ProbeAvailable`, once the agent's Deployment has a ready replica), `observability-controller`
  is in lease mode (the klusterlet's lease controller: `Available=True`,
  `ManagedClusterAddOnLeaseUpdated`), each resynced every 30 s;
- in the `acm` profile, the observability operator's placementrule controller, which copies
  `Available`, `Degraded` and `Progressing` from the cluster's hub copy as they are, only when a
  condition's status changes.

Each reads from its informer's cache and writes as OCM's patcher does: a JSON merge patch of the
status conditions under the resourceVersion it saw, and only when its condition differs (a 409
is read again and retried).
`time_scale` runs the 30 s resync faster (the demo's simulated minutes).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from controller.hub.ocm import MANAGED_CLUSTER_ADDON
from controller.kube.api import ADDON, ALL_NAMESPACES, ConflictError, Kube, KubeError, WatchEvent
from controller.kube.reflector import Reflector, Selection
from controller.kube.runnable import Runnable
from controller.kube.workqueue import WorkQueue

__all__ = ["OcmWriters", "ocm_writers"]

log = logging.getLogger(__name__)

Condition = dict[str, Any]
RESYNC: Final = 30.0  # the klusterlet lease controller's and the health check's, in seconds
_PROGRESSING: Final = ("Progressing", "False", "Completed", "completed with no errors.")
_WORKLOAD: Final = ("Available", "True", "ProbeAvailable", "Addon is available")
_LEASE: Final = ("Available", "True", "ManagedClusterAddOnLeaseUpdated",
                 "observability-controller add-on is available.")  # fmt: skip
_MIRRORED: Final = ("Available", "Degraded", "Progressing")  # MCO's placementrule controller


class OcmWriters:
    """OCM's (and with `acm`, MCO's) writers of the ManagedClusterAddOns named `addon_name`;
    `start()` / `stop()`. `writes` counts their successful writes."""

    def __init__(
        self,
        kube: Kube,
        *,
        addon_name: str,
        acm: bool = False,
        time_scale: float = 1.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._kube, self._addon, self._acm, self._now = kube, addon_name, acm, now
        self._resync = RESYNC / time_scale
        self.queue: WorkQueue[str] = WorkQueue()
        self._copies: dict[str, list[Condition]] = {}  # acm: the hub copies' conditions
        self._addons: dict[str, dict[str, Any]] = {}  # the informer's cache
        self._lock = threading.Lock()
        self.writes = 0
        self._worker = Runnable("ocm-writers", self._work, self.queue.shut_down)
        self._reflectors = [
            Reflector(kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name),
                      name="ocm-addons", on_listed=self._listed, on_event=self._event,
                      watch_seconds=60),
        ]  # fmt: skip
        if acm:
            self._reflectors.append(
                Reflector(kube, Selection(ADDON, ALL_NAMESPACES, name="observability-addon"),
                          name="ocm-copies", on_listed=self._copies_listed,
                          on_event=self._copy_event, watch_seconds=60)
            )  # fmt: skip

    def start(self) -> None:
        self._worker.start()
        for reflector in self._reflectors:
            reflector.start()

    def stop(self) -> None:
        self._worker.stop()
        for reflector in self._reflectors:
            reflector.stop()

    # --- what makes them look ---------------------------------------------------------------

    def _listed(self, items: list[dict[str, Any]], version: str) -> None:
        for item in items:
            self._event(WatchEvent("ADDED", item))

    def _event(self, event: WatchEvent) -> None:
        """Every event of a ManagedClusterAddOn (`addonprogressing` reconciles on each); the
        first of a namespace starts its 30 s resync."""
        namespace = str(event.object["metadata"]["namespace"])
        with self._lock:
            if event.type == "DELETED":
                self._addons.pop(namespace, None)
                return
            self._addons[namespace] = event.object
        if event.type == "ADDED":
            self.queue.add_after(f"resync/{namespace}", self._resync)
        self.queue.add(namespace)

    def _copies_listed(self, items: list[dict[str, Any]], version: str) -> None:
        for item in items:
            self._copy_event(WatchEvent("ADDED", item))

    def _copy_event(self, event: WatchEvent) -> None:
        """MCO reconciles on a hub copy whose conditions' statuses changed (its predicate), and
        copies from the copy it was told of: never from a cache older than what started it."""
        namespace = str(event.object["metadata"]["namespace"])
        conditions = list((event.object.get("status") or {}).get("conditions") or [])
        with self._lock:
            before = _statuses(self._copies.get(namespace))
            self._copies[namespace] = conditions
        if _statuses(conditions) != before:
            self.queue.add(f"copy/{namespace}")

    # --- writing ----------------------------------------------------------------------------

    def _work(self) -> None:
        while (key := self.queue.get()) is not None:
            try:
                if key.startswith("resync/"):
                    namespace = key.removeprefix("resync/")
                    self.queue.add(namespace)
                    self.queue.add_after(key, self._resync)
                elif key.startswith("copy/"):
                    self._sync(key.removeprefix("copy/"), copying=True)
                else:
                    self._sync(key)
            except KubeError as error:
                log.debug("OCM's writer on %s: %s", key, error)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    def _sync(self, namespace: str, *, copying: bool = False) -> None:
        """OCM's conditions, or (`copying`) MCO's copy of the hub copy's."""
        with self._lock:
            cached = self._addons.get(namespace)
        for attempt in range(5):
            try:
                obj = (
                    cached
                    if attempt == 0 and cached is not None
                    else self._kube.get(MANAGED_CLUSTER_ADDON, namespace, self._addon)
                )
            except KubeError:
                return  # gone: nothing to write
            conditions = list((obj.get("status") or {}).get("conditions") or [])
            wanted = (
                self._copied(namespace, conditions) if copying else self._ocm(namespace, conditions)
            )
            if wanted == conditions:
                return
            patch = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                     "status": {"conditions": wanted}}  # fmt: skip
            try:
                self._kube.patch_status(MANAGED_CLUSTER_ADDON, namespace, self._addon, patch)
            except ConflictError:
                continue
            with self._lock:
                self.writes += 1
            return

    def _ocm(self, namespace: str, conditions: list[Condition]) -> list[Condition]:
        """OCM's conditions; with `acm`, not the types MCO copies from the hub copy (its copy
        wins, as MCO writes it last)."""
        with self._lock:
            copied = (
                {c.get("type") for c in self._copies.get(namespace, [])} if self._acm else set()
            )
        result = conditions
        for wanted in (_PROGRESSING, _LEASE if self._acm else _WORKLOAD):
            if wanted[0] not in copied:
                result = _set(result, wanted, self._now)
        return result

    def _copied(self, namespace: str, conditions: list[Condition]) -> list[Condition]:
        with self._lock:
            copy = {c.get("type"): c for c in self._copies.get(namespace, [])}
        result = conditions
        for kind in _MIRRORED:
            source = copy.get(kind)
            current = next((c for c in result if c.get("type") == kind), None)
            if source is not None and (current is None or current["status"] != source["status"]):
                kept = {k: source.get(k) for k in ("type", "status", "reason", "message",
                                                   "lastTransitionTime")}  # fmt: skip
                result = [c for c in result if c.get("type") != kind] + [kept]
        return result


def _statuses(conditions: list[Condition] | None) -> dict[Any, Any]:
    return {c.get("type"): c.get("status") for c in conditions or [] if c.get("type") in _MIRRORED}


def _set(
    conditions: list[Condition], wanted: tuple[str, str, str, str], now: Callable[[], datetime]
) -> list[Condition]:
    """`conditions` with `wanted` (type, status, reason, message) set as
    meta.SetStatusCondition does: the transition time moves only with the status; nothing
    changes when all is the same."""
    kind, status, reason, message = wanted
    result = [dict(c) for c in conditions]
    for condition in result:
        if condition.get("type") != kind:
            continue
        if (condition.get("status"), condition.get("reason"), condition.get("message")) == (
            status, reason, message,
        ):  # fmt: skip
            return conditions
        if condition.get("status") != status:
            condition["lastTransitionTime"] = _time(now)
        condition.update(status=status, reason=reason, message=message)
        return result
    result.append({"type": kind, "status": status, "reason": reason, "message": message,
                   "lastTransitionTime": _time(now)})  # fmt: skip
    return result


def _time(now: Callable[[], datetime]) -> str:
    return now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@contextmanager
def ocm_writers(
    kubeconfig: Path,
    addon_name: str,
    *,
    time_scale: float,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Iterator[OcmWriters]:
    """OCM's writers on the hub of `kubeconfig` while the block runs (the demo's fleet)."""
    from controller.kube.kubeconfig import client_for
    from controller.kube.rest import RestKube

    with client_for(kubeconfig) as api:
        writers = OcmWriters(RestKube(api, request_timeout=5.0), addon_name=addon_name,
                             time_scale=time_scale, now=now)  # fmt: skip
        writers.start()
        try:
            yield writers
        finally:
            writers.stop()
