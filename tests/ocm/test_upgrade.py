"""Upgrading a fleet from release 0.1.0 to the current one on the OCM path (docs/operations.md,
"Upgrading from 0.1.0"), in the world of upgrade_world.py, with this checkout's hub side standing
in for 0.1.0's (whose code is not kept here): started from 0.1.0's Deployment, with 0.1.0's
ClusterRole and, beside it, the reads the current code needs that 0.1.0's role did not grant
(never a write); test_upgrade_own_process.py runs 0.1.0's own hub side where the history is.
Before the upgrade acm's ManagedClusterAddOn shows the copy; seed's does not: 0.1.0's hub side
named `observability-controller`, which a plain OCM hub does not have.

What must hold: every addon CR and hub copy is the same object with the same conditions; the
ManagedClusterAddOns, the agent RoleBindings, the CRDs, the agent Deployments and their serving
Secrets keep their UIDs; the Deployments carry the current template's pod; the hub side writes
each ManagedClusterAddOn at most once during the upgrade (acm: none; seed: its first); no call
is refused on any server; what is left over is what the docs say; and a report after the
upgrade reaches the ManagedClusterAddOn."""

from __future__ import annotations

import pytest

from controller.demo.addon_manager import DELETION_ORPHAN
from controller.hub.mirror import OWNED_TYPES
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.names import UF
from tests.ocm.releases import ROLLOUTS, TlsHub, hub_side_of, kept
from tests.ocm.upgrade_world import (
    CRD,
    SHOWN,
    Fleet,
    OldHubSide,
    before,
    conditions_on,
    kept_where,
    report,
    uids,
    upgrade_fleet,
)
from tests.ocm.world import ADDON_NAMESPACE, CLUSTERS, COPY, HUB_SIDE, RBAC, Obj
from tests.support import WAIT, apply_objects, eventually

__all__ = ["before"]  # the world's fixture, with this module's old_hub_side

pytestmark = [pytest.mark.integration, pytest.mark.slow]
STAND_IN = "addon-status-upgrade-test:0.1.0-process"


def _stand_in(current: list[Obj]) -> list[Obj]:
    """The current process stands in for 0.1.0's hub side (whose code is not here), with 0.1.0's
    ClusterRole and this one beside it: what the current process reads that 0.1.0's role did
    not grant (cluster namespaces, ManagedClusters, access reviews, a copy's get), never a
    write of a ManagedClusterAddOn. Removed when the hub side is upgraded."""
    role = find(current, "ClusterRole", "addon-status-hub-controller")
    rules = [r for r in role["rules"]
             if not any(x.startswith("managedclusteraddons") for x in r["resources"])]  # fmt: skip
    subject = {"kind": "ServiceAccount", "name": "addon-status-hub-controller",
               "namespace": "addon-status"}  # fmt: skip
    return [
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": STAND_IN},
         "rules": rules},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": STAND_IN},
         "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": STAND_IN},
         "subjects": [subject]},
    ]  # fmt: skip


class _StandIn:
    """This checkout's hub side as 0.1.0's Deployment starts it, with the stand-in's grant,
    which goes when it stops."""

    def __init__(self, flavour: str, old: list[Obj], tls: TlsHub) -> None:
        current = build(MANIFESTS / ROLLOUTS[flavour]).objects
        apply_objects(tls.kube("admin"), _stand_in(current))
        self.tls, self.replica = tls, hub_side_of(old, tls.connection("hub-side"))
        self.stopped = False

    def __enter__(self) -> _StandIn:
        self.replica.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.replica.stop()
            self.tls.kubectl("admin", "delete", f"clusterrolebinding/{STAND_IN}",
                             f"clusterrole/{STAND_IN}")  # fmt: skip


@pytest.fixture
def old_hub_side() -> OldHubSide:
    return _StandIn


def test_upgrading_from_0_1_0_keeps_every_addon_cr_and_replaces_the_agents(
    flavour: str, before: Fleet
) -> None:
    tls, spokes = before.tls, before.spokes
    hub = tls.server
    # 0.1.0's hub side named observability-controller, which plain OCM has not: seed shows none
    for cluster in CLUSTERS:
        shown = {} if flavour == "seed" else {"Degraded": "False"}
        assert conditions_on(hub, cluster, SHOWN[flavour]) == shown
    on_hub, on_spoke = kept_where(flavour)
    hub_before = kept(hub, on_hub)
    spokes_before = [kept(s.server, on_spoke) for s in spokes]
    [old_template] = [t["metadata"]["name"] for t in tls.items("addontemplates")]
    assert old_template.endswith("-0.1.0")
    mark = len(hub.audit)

    applied = upgrade_fleet(flavour, before)
    owned = set(OWNED_TYPES) if flavour == "seed" else {"Degraded"}
    assert all(set(conditions_on(hub, c, SHOWN[flavour])) == owned for c in CLUSTERS)
    upgrade = hub.audit[mark:]

    # kept: the same objects; every addon CR and hub copy with the same conditions
    hub_after = kept(hub, on_hub)
    assert uids(hub_after) == uids(hub_before)
    for where, (_, conditions) in hub_after.items():
        if where[0] == "observabilityaddons" or flavour == "acm":
            assert conditions == hub_before[where][1], where
    for spoke, was in zip(spokes, spokes_before, strict=True):
        now = kept(spoke.server, on_spoke)
        assert uids(now) == uids(was), spoke.cluster
        addon = ("observabilityaddons", ADDON_NAMESPACE, COPY)
        assert now[addon] == was[addon], spoke.cluster
    # replaced: each agent Deployment carries the current template's pod
    for spoke in spokes:
        stored = spoke.server.get_object("apps", "v1", "deployments", ADDON_NAMESPACE,
                                         "addon-status-controller") or {}  # fmt: skip
        pod = find(spoke.rendered.agent, "Deployment")["spec"]["template"]["spec"]
        [wanted] = pod["containers"]
        [container] = stored["spec"]["template"]["spec"]["containers"]
        assert (container["image"], container["args"]) == (wanted["image"], wanted["args"])
    # the hub side wrote each ManagedClusterAddOn at most once: acm none (it showed the same
    # already), seed one (0.1.0's named an absent one); no call was refused
    writes = [r for r in upgrade if r.user == HUB_SIDE.username and r.verb in ("patch", "update")
              and r.resource == "managedclusteraddons"]  # fmt: skip
    for cluster in CLUSTERS:
        mine = [(r.name, r.code) for r in writes if r.namespace == cluster]
        assert mine == ([(SHOWN[flavour], 200)] if flavour == "seed" else []), writes
    assert [r for r in hub.audit if r.code == 403] == []
    for spoke in spokes:
        assert [r for r in spoke.server.audit if r.code == 403] == [], spoke.cluster
    _leftovers(flavour, before, applied, old_template)

    # a report after the upgrade reaches the ManagedClusterAddOn
    for spoke in spokes:
        report(spoke, "operator", UF)  # an operator's reason is never dampened (spec §3)
    for cluster in CLUSTERS:
        eventually(lambda c=cluster: conditions_on(hub, c, SHOWN[flavour])["Degraded"] == "True",
                   f"{cluster}'s report after the upgrade shown", timeout=3 * WAIT)  # fmt: skip


def _leftovers(flavour: str, fleet: Fleet, applied: list[str], old_template: str) -> None:
    """What the upgrade leaves, and why."""
    tls = fleet.tls
    # kubectl apply without --prune: 0.1.0's template stays (the CMA no longer names it) until
    # the operator deletes it as the docs say; seed: the copies' CRD, now manifests/hub/crd's,
    # gains the GitOps prune annotations
    new_template = old_template.removesuffix("-0.1.0")  # one name across releases from now on
    assert f"addontemplate.addon.open-cluster-management.io/{new_template} created" in applied
    assert old_template in {t["metadata"]["name"] for t in tls.items("addontemplates")}
    tls.kubectl("admin", "delete", "addontemplate", old_template)
    if flavour == "seed":
        crd = tls.server.get_object("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                    "", CRD) or {}  # fmt: skip
        assert "argocd.argoproj.io/sync-options" in crd["metadata"]["annotations"]
    for spoke in fleet.spokes:
        crd = spoke.server.get_object("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                                      "", CRD) or {}  # fmt: skip
        # the work agent updated it in place: from now on a removal leaves it (seed: 0.1.0's
        # was not annotated; acm's is ACM's, never in the work)
        annotations = crd["metadata"].get("annotations") or {}
        assert (DELETION_ORPHAN in annotations) == (flavour == "seed"), spoke.cluster
        # 0.1.0's serving Secret (a pair without its CA's key): seed's controller now issues
        # its own, from a new CA it publishes for the reporters; acm's stays OpenShift's
        issued = spoke.server.get_object("", "v1", "configmaps", ADDON_NAMESPACE,
                                         "addon-status-serving-cert-ca")  # fmt: skip
        assert (issued is not None) == (flavour == "seed"), spoke.cluster
        if issued is not None:
            assert issued["data"]["ca.crt"].encode() != spoke.ca.read_bytes()
            spoke.ca.write_bytes(issued["data"]["ca.crt"].encode())
