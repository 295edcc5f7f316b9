"""Upgrading a fleet from release 0.1.0 to the current one on the OCM path (docs/operations.md,
"Upgrading"), with authorization on everywhere (kubesim's RBAC, as kube-apiserver's; the hub
over TLS, as kubectl sends a token over nothing else).

Before: 0.1.0's `manifests/ocm` (or `ocm/acm`, pinned in tests/data/releases/0.1.0) applied on
a hub with the real `kubectl apply -k` (seed: it lists the copies' CRD itself); for `cluster1`
and `cluster2` the addon manager's rendering of the template the ClusterManagementAddOn names
(`addon-status-0.1.0`), applied to a spoke as the work agent applies a ManifestWork, and the
agent's RoleBinding made by hand (0.1.0 granted the addon manager no `bind`). The processes are
this checkout's code (0.1.0's is not kept here), started as 0.1.0's manifests start them: each
agent from its rendered pod (0.1.0's flags, its mounted serving pair), bound only by 0.1.0's
roles; the hub side from 0.1.0's Deployment, with 0.1.0's ClusterRole and, beside it, the reads
the current code needs that 0.1.0's did not grant (never a write). Each agent gets reports, so
every addon CR and hub copy has a status; acm's ManagedClusterAddOn shows it; seed's does not:
0.1.0's hub side named `observability-controller`, which a plain OCM hub does not have.

The upgrade, as an operator runs it: `kubectl apply -k manifests/hub/crd` (seed), then the
current rollout, without `--prune` (what 0.1.0 listed and the current one does not stays: the
old AddOnTemplate, which the docs then delete; seed: the copies' CRD, now manifests/hub/crd's).
The hub side's Deployment changes, so its pod is replaced. The ClusterManagementAddOn now names
another template (`addon-status`): the addon manager renders that one into the same ManifestWork
and the work agent updates each object in place, deleting what the work no longer lists unless
orphaned (controller.demo.addon_manager; nothing, here); the spoke's Deployment controller
replaces the agent's pod with one from the new spec (kubesim runs none: the test stops the old
replica, which releases its Lease, and starts the new one).

What must hold: every addon CR and hub copy is the same object with the same conditions; the
ManagedClusterAddOns, the agent RoleBindings, the CRDs, the agent Deployments and their serving
Secrets keep their UIDs; the Deployments carry the current template's pod; the hub side writes
each ManagedClusterAddOn at most once during the upgrade (acm: none; seed: its first); no call
is refused on any server; what is left over is what the docs say; and a report after the
upgrade reaches the ManagedClusterAddOn."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import pytest

from controller.demo.addon_manager import DELETION_ORPHAN, Rendered, chosen_template, render
from controller.hub.app import HubReplica
from controller.hub.mirror import OWNED_TYPES, cluster_namespace, managed_cluster_addon
from controller.reporter.client import ReportClient
from controller.spoke.app import Replica
from kubesim import APIServer, UserInfo
from tests.certificates import Authority
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.names import FS, MC, UF, US
from tests.ocm.releases import PREVIOUS, ROLLOUTS, Ident, TlsHub, hub_side_of, kept
from tests.ocm.releases import work_agent_update as work_agent
from tests.ocm.world import (
    ADDON_MANAGER,
    ADDON_MANAGER_RBAC,
    ADDON_NAMESPACE,
    ADMIN,
    CLUSTERS,
    COLLECTOR,
    CONTROLLER,
    COPY,
    HUB_SIDE,
    OCM_CRDS,
    OPERATOR,
    RBAC,
    UPSTREAM,
    Obj,
    addon_cr,
    copy_status,
    crd_files,
    replica_for,
    sorted_conditions,
)
from tests.support import WAIT, apply_objects, connection, eventually, kube_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SHOWN = {"seed": "addon-status", "acm": "observability-controller"}  # the current hub side's
MCAS = {"seed": ("addon-status",), "acm": ("addon-status", "observability-controller")}
STAND_IN = "addon-status-upgrade-test:0.1.0-process"
SERVING = "addon-status-serving-cert"
CRD = "observabilityaddons.observability.open-cluster-management.io"


@dataclass
class Spoke:
    cluster: str
    server: APIServer
    root: Path
    rendered: Rendered  # what the ManifestWork lists now
    replica: Replica
    ca: Path  # what the reporters trust


@dataclass
class Fleet:
    tls: TlsHub
    spokes: list[Spoke]
    hub_side: HubReplica
    stack: ExitStack  # stops whatever runs; the test puts the new processes on it


def _addon_manager(tls: TlsHub, cluster: str) -> Rendered:
    """The addon manager's rendering for `cluster` of what the hub holds now."""
    hub = tls.server
    addon = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                           "clustermanagementaddons", "", "addon-status")  # fmt: skip
    config = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                            "addondeploymentconfigs", "addon-status", "addon-status")  # fmt: skip
    assert addon is not None and config is not None
    return render(chosen_template(addon, tls.items("addontemplates")), cluster, config)


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


def _report(spoke: Spoke, token: str, reason: str, component: str | None = None) -> None:
    url = spoke.replica.report_url
    with ReportClient(url, token=token, ca_file=str(spoke.ca), deadline=WAIT) as client:
        if component is None:
            answer = client.report(reason=reason, message="deployed")
        else:
            answer = client.report(component, reason=reason)
        assert answer["verdict"] == "accepted", answer


def _shown(hub: APIServer, cluster: str, name: str) -> dict[str, str]:
    found = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                           "managedclusteraddons", cluster, name)  # fmt: skip
    conditions = ((found or {}).get("status") or {}).get("conditions") or []
    return {c["type"]: c["status"] for c in conditions}


def _followed(fleet: Fleet) -> None:
    hub = fleet.tls.server
    for spoke in fleet.spokes:
        eventually(lambda s=spoke: bool(copy_status(s.server, ADDON_NAMESPACE).get("conditions"))
                   and sorted_conditions(copy_status(hub, s.cluster))
                   == sorted_conditions(copy_status(s.server, ADDON_NAMESPACE)),
                   f"{spoke.cluster}'s hub copy follows its spoke", timeout=3 * WAIT)  # fmt: skip


@pytest.fixture
def before(flavour: str, tmp_path: Path) -> Iterator[Fleet]:
    """The fleet on 0.1.0, every addon CR and hub copy with a status."""
    old = build(PREVIOUS / ROLLOUTS[flavour]).objects
    current = build(MANIFESTS / ROLLOUTS[flavour]).objects
    copies = crd_files(old, tmp_path) or [UPSTREAM / "observabilityaddons.crd.yaml"]
    tokens = {"admin": ADMIN, "hub-side": HUB_SIDE, "addon-manager": ADDON_MANAGER}
    for cluster in CLUSTERS:
        identity = render(find(old, "AddOnTemplate"), cluster).identity
        tokens[f"agent-{cluster}"] = UserInfo(identity.user, groups=identity.groups)
    with ExitStack() as stack:
        tls = TlsHub.started(stack, [*OCM_CRDS, *copies], tmp_path, tokens=tokens, rbac=True)
        tls.apply(PREVIOUS / ROLLOUTS[flavour])
        admin = tls.kube("admin")
        apply_objects(admin, [*ADDON_MANAGER_RBAC, *_stand_in(current)])
        spokes = []
        serving = Authority("spoke services", valid=dt.timedelta(days=365))
        for cluster in CLUSTERS:
            found = [cluster_namespace(cluster),
                     *(managed_cluster_addon(cluster, name) for name in MCAS[flavour])]  # fmt: skip
            apply_objects(admin, found + ([addon_cr(cluster)] if flavour == "acm" else []))
            rendered = _addon_manager(tls, cluster)
            # 0.1.0 granted the addon manager no `bind` (OCM v1.3 refuses it the binding:
            # test_rollout's second test): a 0.1.0 operator bound the agent by hand
            apply_objects(admin, rendered.hub)
            spokes.append(_spoke(stack, tls, rendered, cluster, serving, tmp_path / cluster))
        hub_side = stack.enter_context(hub_side_of(old, tls.connection("hub-side")))
        fleet = Fleet(tls, spokes, hub_side, stack)
        for spoke in spokes:
            _report(spoke, "operator", US)
            _report(spoke, "collector", FS, MC)
        _followed(fleet)
        yield fleet


def _spoke(  # noqa: PLR0917 (one cluster's parts)
    stack: ExitStack, tls: TlsHub, rendered: Rendered, cluster: str, serving: Authority,
    root: Path,
) -> Spoke:  # fmt: skip
    root.mkdir()
    crds = crd_files(rendered.agent, root) or [UPSTREAM / "observabilityaddons.crd.yaml"]
    tokens = {"admin": ADMIN, "controller": CONTROLLER, "operator": OPERATOR,
              "collector": COLLECTOR}  # fmt: skip
    server = stack.enter_context(APIServer(crds, tokens=tokens, rbac=True))
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ADDON_NAMESPACE}}
    pair = serving.server()
    # 0.1.0 mounted a serving certificate someone else issued (OpenShift's service CA, or the
    # operator): its pair, without the CA's key
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
              "metadata": {"name": SERVING, "namespace": ADDON_NAMESPACE},
              "data": {"tls.crt": base64.b64encode(pair.cert).decode(),
                       "tls.key": base64.b64encode(pair.key).decode()}}  # fmt: skip
    apply_objects(kube_of(server, "admin"), [namespace, addon_cr(ADDON_NAMESPACE), secret])
    assert work_agent(server, "admin", [], rendered.agent) == []
    replica = _replica(server, tls, rendered, cluster, root / "0.1.0")
    stack.enter_context(replica)
    ca = root / "serving-ca.crt"
    ca.write_bytes(serving.ca)
    return Spoke(cluster, server, root, rendered, replica, ca)


def _replica(
    server: APIServer, tls: TlsHub, rendered: Rendered, cluster: str, root: Path
) -> Replica:
    """The agent's pod: its rendered spec, its Secrets mounted (the serving pair as the spoke
    holds it now), on loopback ports."""
    hub_kubeconfig = tls.kubeconfig(f"agent-{cluster}")
    stored = server.get_object("", "v1", "secrets", ADDON_NAMESPACE, SERVING) or {}
    pair = {k: base64.b64decode(v) for k, v in (stored.get("data") or {}).items()}
    secrets = {"addon-status-hub-kubeconfig": {"kubeconfig": hub_kubeconfig}, SERVING: pair}
    return replica_for(rendered, root, secrets, connection(server, "controller"))


def _where(flavour: str) -> tuple[list[Ident], list[Ident]]:
    """What must be kept: on the hub, on each spoke."""
    hub = [("customresourcedefinitions", "", CRD)] if flavour == "seed" else []
    hub += [("observabilityaddons", c, COPY) for c in CLUSTERS]
    hub += [("managedclusteraddons", c, n) for c in CLUSTERS for n in MCAS[flavour]]
    hub += [("rolebindings", c, "open-cluster-management:addon-status:clusterrole:agent")
            for c in CLUSTERS]  # fmt: skip
    spoke = [("observabilityaddons", ADDON_NAMESPACE, COPY),
             ("customresourcedefinitions", "", CRD),
             ("deployments", ADDON_NAMESPACE, "addon-status-controller"),
             ("secrets", ADDON_NAMESPACE, SERVING)]  # fmt: skip
    return hub, spoke


def _upgrade(flavour: str, fleet: Fleet) -> list[str]:
    """What the operator runs, and what OCM and the spokes' Deployment controllers do then;
    kubectl's lines of the rollout's apply."""
    tls = fleet.tls
    # the operator: the CRD step (seed), then the current rollout, as kubectl apply -k does
    if flavour == "seed":
        tls.apply(MANIFESTS / "hub" / "crd")
    applied = tls.apply(MANIFESTS / ROLLOUTS[flavour])
    current = build(MANIFESTS / ROLLOUTS[flavour]).objects
    # the hub side's Deployment changed: its pod is replaced (the stand-in's grant goes with it)
    fleet.hub_side.stop()
    tls.kubectl("admin", "delete", f"clusterrolebinding/{STAND_IN}", f"clusterrole/{STAND_IN}")
    fleet.hub_side = fleet.stack.enter_context(hub_side_of(current, tls.connection("hub-side")))
    # OCM: the ClusterManagementAddOn names another template; each cluster's work is rendered
    # from it, the agent's RoleBinding re-applied as the addon manager (its bind is granted now)
    for spoke in fleet.spokes:
        rendered = _addon_manager(tls, spoke.cluster)
        assert rendered.agent != spoke.rendered.agent
        apply_objects(tls.kube("addon-manager"), rendered.hub)
        gone = work_agent(spoke.server, "admin", spoke.rendered.agent, rendered.agent)
        assert gone == []  # 0.1.0's work lists nothing the current one does not
        # the Deployment controller replaces the pod (kubesim runs none): the old one stops,
        # releasing its Lease, and one from the new spec starts
        spoke.replica.stop()
        spoke.rendered = rendered
        spoke.replica = fleet.stack.enter_context(
            _replica(spoke.server, tls, rendered, spoke.cluster, spoke.root / "current")
        )
    for spoke in fleet.spokes:
        eventually(lambda s=spoke: s.replica.leading, f"{spoke.cluster}'s new agent leads")
    eventually(lambda: fleet.hub_side.side.synced, "the new hub side synced")
    _followed(fleet)
    owned = set(OWNED_TYPES) if flavour == "seed" else {"Degraded"}
    for cluster in CLUSTERS:
        eventually(lambda c=cluster: set(_shown(tls.server, c, SHOWN[flavour])) == owned,
                   f"{cluster}'s ManagedClusterAddOn shows the project's conditions")  # fmt: skip
    return applied


def _uids(seen: dict[Ident, tuple[str, list[Obj]]]) -> dict[Ident, str]:
    return {where: uid for where, (uid, _) in seen.items()}


def test_upgrading_from_0_1_0_keeps_every_addon_cr_and_replaces_the_agents(
    flavour: str, before: Fleet
) -> None:
    tls, spokes = before.tls, before.spokes
    hub = tls.server
    # 0.1.0's hub side named observability-controller, which plain OCM has not: seed shows none
    for cluster in CLUSTERS:
        shown = {} if flavour == "seed" else {"Degraded": "False"}
        assert _shown(hub, cluster, SHOWN[flavour]) == shown
    on_hub, on_spoke = _where(flavour)
    hub_before = kept(hub, on_hub)
    spokes_before = [kept(s.server, on_spoke) for s in spokes]
    [old_template] = [t["metadata"]["name"] for t in tls.items("addontemplates")]
    assert old_template.endswith("-0.1.0")
    mark = len(hub.audit)

    applied = _upgrade(flavour, before)
    upgrade = hub.audit[mark:]

    # kept: the same objects; every addon CR and hub copy with the same conditions
    hub_after = kept(hub, on_hub)
    assert _uids(hub_after) == _uids(hub_before)
    for where, (_, conditions) in hub_after.items():
        if where[0] == "observabilityaddons" or flavour == "acm":
            assert conditions == hub_before[where][1], where
    for spoke, was in zip(spokes, spokes_before, strict=True):
        now = kept(spoke.server, on_spoke)
        assert _uids(now) == _uids(was), spoke.cluster
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
        _report(spoke, "operator", UF)  # an operator's reason is never dampened (spec §3)
    for cluster in CLUSTERS:
        eventually(lambda c=cluster: _shown(hub, c, SHOWN[flavour]).get("Degraded") == "True",
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
