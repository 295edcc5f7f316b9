"""The controllers of Open Cluster Management (v1.3) and ACM that write on the hub beside the hub
side, as they write, so that the demo and the tests run the hub side in the world it runs in
(docs/spec.md §12.1; in a real fleet OCM does this; the project never does). On every
ManagedClusterAddOn (MCA) of the addon:

- the addon manager's `addonprogressing`, on every event of the MCA: `Progressing=False`,
  `Completed`, "completed with no errors.";
- the health check, resynced every 30 s: template addons are fixed to workload availability,
  `observability-controller` (acm) to the klusterlet's lease (`Available=True`,
  `ManagedClusterAddOnLeaseUpdated`);
- in `acm`, unless dropped (`mco_status`), MCO's status copy (`controller.demo.mco`) on any
  change of a copy's conditions: a merge patch from its cache without a resourceVersion.

On the demo's whole hub (`rendered`: each cluster's share of the rollout), the rest of OCM too:

- the addon manager's registration: the agent's hub RoleBinding, created as the addon manager
  (`addon_manager`: its identity, which RBAC's escalation check refuses without the rollout's
  `bind` grant), again when it is deleted; `RegistrationApplied` says whether it could;
- its agentdeploy: the agent's ManifestWork, and `ManifestApplied` from its `Applied`;
- the health check from the ManifestWork's status feedback (`ocm_model.probe`): `True` while the
  agent's Deployment has a ready replica, `False` when it has none, `Unknown` before any;
- the hub's registration: `HubAcceptedManagedCluster` on each accepted ManagedCluster, and its
  lease controller: a cluster whose lease (the klusterlet renews it) has not been renewed for five
  lease durations is `ManagedClusterConditionAvailable=Unknown`, and so is every MCA's
  `Available` of that cluster, with the cluster's reason and message (the health check stays off
  such a cluster until it is back).

Without `rendered` (a hub of MCAs alone, as tests/hub runs the hub side) every agent counts as
available. They run on the project's one informer and loop, on the story's clock (`now`): a
requeue waits for story time, `tick()` says the clock moved. They write as OCM's patcher: a JSON
merge patch of the conditions under the resourceVersion read, only when a condition differs (a
409 reads again). `time_scale` runs the 30 s resync faster."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from controller.demo.addon_manager import Rendered
from controller.demo.mco import MCO_OWNER, placementrule_copy
from controller.demo.ocm_clusters import ClusterRegistration
from controller.demo.ocm_model import (
    MANAGED_CLUSTER_ADDON,
    MANIFEST_WORK,
    ROLE_BINDING,
    Wanted,
    condition,
    probe,
    probed,
    set_condition,
    work_name,
)
from controller.kube.api import (
    ADDON,
    ALL_NAMESPACES,
    ApiResource,
    ConflictError,
    ForbiddenError,
    Kube,
    NotFoundError,
)
from controller.kube.controller import Controller, Result
from controller.kube.informer import Handlers, Informer
from controller.kube.ratelimit import default_rate_limiter
from controller.kube.reflector import Selection
from statemachines.object_names import ADDON_CR

__all__ = ["OcmWriters", "ocm_writers"]

Obj = dict[str, Any]
RESYNC: Final = 30.0  # the klusterlet lease controller's and the health check's, in seconds
_PROGRESSING: Final = ("Progressing", "False", "Completed", "completed with no errors.")
_LEASE: Final = ("Available", "True", "ManagedClusterAddOnLeaseUpdated",
                 "observability-controller add-on is available.")  # fmt: skip
_ADDON_LABEL: Final = "open-cluster-management.io/addon-name"


class OcmWriters:
    """OCM's (and with `acm`, MCO's) writers on the hub of `kube`; see the module docstring.
    `start()` / `stop()`; `writes` counts their successful status writes."""

    def __init__(
        self,
        kube: Kube,
        *,
        addon_name: str,
        acm: bool = False,
        mco_status: bool = True,
        time_scale: float = 1.0,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        rendered: Mapping[str, Rendered] | None = None,
        addon_manager: Kube | None = None,
    ) -> None:
        if rendered is not None and acm:
            raise ValueError("the whole hub is modelled for the seed profile's template addon")
        self._kube, self._addon, self._acm, self._now = kube, addon_name, acm, now
        self._rendered = rendered
        self._manager = addon_manager or kube
        self._resync = RESYNC / time_scale
        self.writes = 0
        # held until every cache is filled: an absent RoleBinding is one the cache does not hold
        self.loop: Controller[str] = Controller(
            "ocm-writers", self._sync, clock=lambda: self._now().timestamp(),
            rate_limiter=default_rate_limiter(), held=True,
        )  # fmt: skip
        queue = self.loop.queue.add
        self.addons: Informer[Obj] = Informer(
            kube, Selection(MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, name=addon_name),
            name="ocm-addons", watch_seconds=60, handlers=Handlers(
                added=lambda key, new: self._added(_namespace(key)),
                updated=lambda key, old, new: queue(_namespace(key)),
                listed=self._listed,
            ),
        )  # fmt: skip
        self._informers: list[Informer[Any]] = [self.addons]
        self._copies: Informer[list[Obj]] | None = None
        if acm and mco_status:  # False: adopted, MCO's status copy dropped (docs/spec.md §12.1)
            self._copies = Informer(
                kube, Selection(ADDON, ALL_NAMESPACES, name=ADDON_CR,
                                label_selector=MCO_OWNER),
                name="ocm-copies", keep=_conditions, watch_seconds=60, handlers=Handlers(
                    added=lambda key, new: queue(f"copy/{_namespace(key)}"),
                    updated=self._copy_changed, listed=self._listed,
                ),
            )  # fmt: skip
            self._informers.append(self._copies)
        self.clusters: ClusterRegistration | None = None
        if rendered is not None:
            self.clusters = ClusterRegistration(
                kube, now=now, queue=self.loop.queue, watch_seconds=60,
                wrote=self._count, listed=self._listed,
            )  # fmt: skip
            self.works: Informer[Obj] = self._follow(MANIFEST_WORK, work_name(addon_name))
            self.bindings: Informer[Obj] = Informer(
                kube, Selection(ROLE_BINDING, label_selector=f"{_ADDON_LABEL}={addon_name}"),
                name="ocm-bindings", watch_seconds=60, handlers=Handlers(
                    deleted=lambda key, old: queue(_namespace(key)),  # made again at once
                    listed=self._listed,
                ),
            )  # fmt: skip
            self._informers += [*self.clusters.informers, self.works, self.bindings]

    def _follow(self, resource: ApiResource, name: str) -> Informer[Obj]:
        """An informer whose every change queues the MCA of its namespace."""
        queue = self.loop.queue.add
        return Informer(
            self._kube, Selection(resource, ALL_NAMESPACES, name=name),
            name=f"ocm-{resource.plural}", watch_seconds=60, handlers=Handlers(
                added=lambda key, new: queue(_namespace(key)),
                updated=lambda key, old, new: queue(_namespace(key)),
                deleted=lambda key, old: queue(_namespace(key)),
                listed=self._listed,
            ),
        )  # fmt: skip

    # --- running ---------------------------------------------------------------------------

    def start(self) -> None:
        self.loop.start()
        for informer in self._informers:
            informer.start()

    def stop(self) -> None:
        self.loop.stop()
        for informer in self._informers:
            informer.stop()

    def tick(self) -> None:
        """The story's clock moved: whatever waits for a time now past runs."""
        self.loop.queue.wake()

    def settled(self, timeout: float) -> bool:
        """Whether nothing is queued or being written within `timeout` real seconds."""
        return self.loop.queue.wait_idle(timeout)

    @property
    def synced(self) -> bool:
        return all(informer.synced for informer in self._informers)

    def _listed(self, version: str) -> None:
        if self.synced:
            self.loop.release()

    # --- what makes them look ---------------------------------------------------------------

    def _added(self, namespace: str) -> None:
        """A new MCA is synced now, and again at every resync."""
        self.loop.queue.add(namespace)
        self.loop.queue.add_after(f"resync/{namespace}", self._resync)

    def _copy_changed(self, key: str, old: list[Obj], new: list[Obj]) -> None:
        """MCO reconciles on any change of a hub copy's conditions (its predicate); what it
        writes depends on the MCA's values, not the copy's old ones."""
        if old != new:
            self.loop.queue.add(f"copy/{_namespace(key)}")

    def _count(self) -> None:
        self.writes += 1

    # --- writing ----------------------------------------------------------------------------

    def _sync(self, key: str) -> Result | None:
        kind, _, namespace = key.rpartition("/")
        if kind == "resync":
            self.loop.queue.add(namespace)
            return Result(requeue_after=self._resync)
        if kind == "cluster" and self.clusters is not None:
            return self.clusters.sync(namespace)
        if kind == "copy":
            self._patch_unconditionally(
                namespace, lambda ns, conditions: placementrule_copy(self._copy_of(ns), conditions)
            )
        else:
            self._write(namespace, self._whole if self._rendered is not None else self._ocm)
        return None

    def _write(self, namespace: str, wanted_of: Callable[[str, list[Obj]], list[Obj]]) -> None:
        """The MCA's status conditions as `wanted_of` wants them, written if they differ."""
        obj = self.addons.get(f"{namespace}/{self._addon}")
        for _ in range(5):
            if obj is None:
                try:
                    obj = self._kube.get(MANAGED_CLUSTER_ADDON, namespace, self._addon)
                except NotFoundError:
                    return  # gone: nothing to write
            conditions = list((obj.get("status") or {}).get("conditions") or [])
            wanted = wanted_of(namespace, conditions)
            if wanted == conditions:
                return
            patch = {"metadata": {"resourceVersion": obj["metadata"]["resourceVersion"]},
                     "status": {"conditions": wanted}}  # fmt: skip
            try:
                written = self._kube.patch_status(MANAGED_CLUSTER_ADDON, namespace, self._addon,
                                                  patch)  # fmt: skip
            except ConflictError:
                obj = None
                continue
            self.addons.remember(written)
            self._count()
            return

    def _patch_unconditionally(
        self, namespace: str, wanted_of: Callable[[str, list[Obj]], list[Obj]]
    ) -> None:
        """As MCO's `client.MergeFrom` patch: the whole list from the cached MCA, no
        resourceVersion, so no 409."""
        obj = self.addons.get(f"{namespace}/{self._addon}")
        if obj is None:
            return  # MCO: "managedclusteraddon does not exist"
        conditions = list((obj.get("status") or {}).get("conditions") or [])
        wanted = wanted_of(namespace, conditions)
        if wanted == conditions:
            return
        patch = {"status": {"conditions": wanted}}
        try:
            written = self._kube.patch_status(MANAGED_CLUSTER_ADDON, namespace, self._addon, patch)
        except NotFoundError:
            return
        self.addons.remember(written)
        self._count()

    def _ocm(self, namespace: str, conditions: list[Obj]) -> list[Obj]:
        """A hub of MCAs alone: Progressing, and Available as if every agent ran; with `acm`,
        not the types MCO copies from the hub copy (its copy wins, as MCO writes it last)."""
        copied = {c.get("type") for c in self._copy_of(namespace)}
        available = _LEASE if self._acm else ("Available", "True", "ProbeAvailable",
                                              f"{self._addon} add-on is available.")  # fmt: skip
        result = conditions
        for wanted in (_PROGRESSING, available):
            if wanted[0] not in copied:
                result = set_condition(result, wanted, self._now())
        return result

    def _whole(self, namespace: str, conditions: list[Obj]) -> list[Obj]:
        """The whole hub: what the addon manager, the health check and the hub's registration
        write on the MCA of cluster `namespace`."""
        assert self._rendered is not None and self.clusters is not None
        share = self._rendered.get(namespace)
        if share is None:
            return conditions  # a cluster the rollout does not know
        now = self._now()
        result = set_condition(conditions, _PROGRESSING, now)
        result = set_condition(result, self._register(namespace, share), now)
        work = self._deploy(namespace, share)
        applied = condition((work or {}).get("status", {}).get("conditions"), "Applied")
        if applied.get("status") == "True":
            result = set_condition(
                result,
                (
                    "ManifestApplied",
                    "True",
                    "AddonManifestApplied",
                    "manifests of addon are applied successfully",
                ),
                now,
            )
        elif applied:
            result = set_condition(
                result,
                (
                    "ManifestApplied",
                    "False",
                    "AddonManifestAppliedFailed",
                    "failed to apply the manifests of addon",
                ),
                now,
            )
        lost = self.clusters.lost(namespace)
        if lost is not None:  # the hub's registration copies the cluster's Unknown
            result = set_condition(result, ("Available", *lost), now)
        elif condition(result, "ManifestApplied"):
            result = set_condition(result, probe(self._addon, work, probed(share.agent)), now)
        return result  # fmt: skip

    def _register(self, namespace: str, share: Rendered) -> Wanted:
        """The agent's hub RoleBindings, created as the addon manager when absent."""
        owner = self.addons.get(f"{namespace}/{self._addon}") or {}
        for binding in share.hub:
            name = binding["metadata"]["name"]
            if self.bindings.get(f"{namespace}/{name}") is not None:
                continue
            body = {**binding, "metadata": {**binding["metadata"],
                                            "ownerReferences": _owned_by(owner)}}  # fmt: skip
            try:
                self.bindings.remember(self._manager.create(ROLE_BINDING, namespace, body))
            except ConflictError:
                continue  # made meanwhile: the watch brings it
            except ForbiddenError as error:
                refused = error.detail.partition(" 403 ")[2] or error.detail
                return ("RegistrationApplied", "False", "SetPermissionFailed",
                        f"Failed to set permission for hub agent: {refused}")  # fmt: skip
        return ("RegistrationApplied", "True", "SetPermissionApplied",
                "Registration of the addon agent is configured")  # fmt: skip

    def _deploy(self, namespace: str, share: Rendered) -> Obj | None:
        """The agent's ManifestWork, created when absent; as the cache holds it."""
        name = work_name(self._addon)
        work = self.works.get(f"{namespace}/{name}")
        if work is not None:
            return work
        body = {"apiVersion": MANIFEST_WORK.api_version, "kind": MANIFEST_WORK.kind,
                "metadata": {"name": name, "namespace": namespace,
                             "labels": {_ADDON_LABEL: self._addon}},
                "spec": {"workload": {"manifests": share.agent}}}  # fmt: skip
        try:
            created = self._kube.create(MANIFEST_WORK, namespace, body)
        except ConflictError:
            return None  # made meanwhile: the watch brings it
        self.works.remember(created)
        return created

    def _copy_of(self, namespace: str) -> list[Obj]:
        if self._copies is None:
            return []
        return self._copies.get(f"{namespace}/{ADDON_CR}") or []


def _namespace(key: str) -> str:
    return key.partition("/")[0]


def _conditions(obj: Obj) -> list[Obj]:
    return list((obj.get("status") or {}).get("conditions") or [])


def _owned_by(mca: Mapping[str, Any]) -> list[Obj]:
    """As OCM's: the agent's RoleBinding belongs to the MCA (none before the MCA is read)."""
    meta = mca.get("metadata") or {}
    if not meta.get("uid"):
        return []
    return [{"apiVersion": MANAGED_CLUSTER_ADDON.api_version, "kind": MANAGED_CLUSTER_ADDON.kind,
             "name": meta["name"], "uid": meta["uid"]}]  # fmt: skip


@contextmanager
def ocm_writers(
    kubeconfig: Path,
    addon_name: str,
    *,
    time_scale: float,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    rendered: Mapping[str, Rendered] | None = None,
    addon_manager: Kube | None = None,
) -> Iterator[OcmWriters]:
    """OCM's writers on the hub of `kubeconfig` while the block runs (the demo's fleet)."""
    from controller.kube.kubeconfig import client_for
    from controller.kube.rest import RestKube

    with client_for(kubeconfig) as api:
        writers = OcmWriters(RestKube(api, request_timeout=5.0), addon_name=addon_name,
                             time_scale=time_scale, now=now, rendered=rendered,
                             addon_manager=addon_manager)  # fmt: skip
        writers.start()
        try:
            yield writers
        finally:
            writers.stop()
