"""The world of the upgrade tests (test_upgrade.py, test_upgrade_own_process.py): a fleet on
release 0.1.0 and its upgrade to the current release on the OCM path, with authorization on
everywhere (kubesim's RBAC, as kube-apiserver's; the hub over TLS, as kubectl sends a token over
nothing else).

Before (`before`): 0.1.0's `manifests/ocm` (or `ocm/acm`, pinned in tests/data/releases/0.1.0)
applied on a hub with the real `kubectl apply -k` (seed: it lists the copies' CRD itself); for
`cluster1` and `cluster2` the addon manager's rendering of the template the
ClusterManagementAddOn names (`addon-status-0.1.0`), applied to a spoke as the work agent
applies a ManifestWork, and the agent's RoleBinding made by hand (0.1.0 granted the addon
manager no `bind`). Each agent is this checkout's code started from its rendered pod (0.1.0's
flags, its mounted serving pair), bound only by 0.1.0's roles; the hub side is what the test
module's `old_hub_side` fixture starts from 0.1.0's Deployment. Each agent gets reports, so
every addon CR and hub copy has a status.

The upgrade (`upgrade`), as an operator runs it: `kubectl apply -k manifests/hub/crd` (seed),
then the current rollout, without `--prune`. The hub side's Deployment changes, so its pod is
replaced. The ClusterManagementAddOn now names another template (`addon-status`): the addon
manager renders that one into the same ManifestWork and the work agent updates each object in
place, deleting what the work no longer lists unless orphaned (controller.demo.addon_manager;
nothing, here); the spoke's Deployment controller replaces the agent's pod with one from the
new spec (kubesim runs none: the old replica stops, releasing its Lease, and the new one
starts)."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

from controller.demo.addon_manager import Rendered, chosen_template, render
from controller.hub.mirror import OWNED_TYPES, cluster_namespace, managed_cluster_addon
from controller.reporter.client import ReportClient
from controller.spoke.app import Replica
from kubesim import APIServer, UserInfo
from tests.certificates import Authority
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.names import FS, MC, US
from tests.ocm.releases import PREVIOUS, ROLLOUTS, Ident, TlsHub, hub_side_of
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
    UPSTREAM,
    Obj,
    addon_cr,
    copy_status,
    crd_files,
    replica_for,
    sorted_conditions,
)
from tests.support import WAIT, apply_objects, connection, eventually, kube_of

SHOWN = {"seed": "addon-status", "acm": "observability-controller"}  # the current hub side's
MCAS = {"seed": ("addon-status",), "acm": ("addon-status", "observability-controller")}
SERVING = "addon-status-serving-cert"
CRD = "observabilityaddons.observability.open-cluster-management.io"


class Stoppable(Protocol):
    def stop(self) -> None: ...


OldHubSide = Callable[[str, list[Obj], TlsHub], AbstractContextManager[Stoppable]]
"""Starts 0.1.0's hub side of a flavour from its rollout on the hub (a test module's
`old_hub_side`); stopped when the upgrade replaces it."""


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
    hub_side: Stoppable
    stack: ExitStack  # stops whatever runs; the test puts the new processes on it


def addon_manager(tls: TlsHub, cluster: str) -> Rendered:
    """The addon manager's rendering for `cluster` of what the hub holds now."""
    hub = tls.server
    addon = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                           "clustermanagementaddons", "", "addon-status")  # fmt: skip
    config = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                            "addondeploymentconfigs", "addon-status", "addon-status")  # fmt: skip
    assert addon is not None and config is not None
    return render(chosen_template(addon, tls.items("addontemplates")), cluster, config)


def report(spoke: Spoke, token: str, reason: str, component: str | None = None) -> None:
    url = spoke.replica.report_url
    with ReportClient(url, token=token, ca_file=str(spoke.ca), deadline=WAIT) as client:
        if component is None:
            answer = client.report(reason=reason, message="deployed")
        else:
            answer = client.report(component, reason=reason)
        assert answer["verdict"] == "accepted", answer


def conditions_on(hub: APIServer, cluster: str, name: str) -> dict[str, str]:
    found = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                           "managedclusteraddons", cluster, name)  # fmt: skip
    conditions = ((found or {}).get("status") or {}).get("conditions") or []
    return {c["type"]: c["status"] for c in conditions}


def followed(fleet: Fleet) -> None:
    hub = fleet.tls.server
    for spoke in fleet.spokes:
        eventually(lambda s=spoke: bool(copy_status(s.server, ADDON_NAMESPACE).get("conditions"))
                   and sorted_conditions(copy_status(hub, s.cluster))
                   == sorted_conditions(copy_status(s.server, ADDON_NAMESPACE)),
                   f"{spoke.cluster}'s hub copy follows its spoke", timeout=3 * WAIT)  # fmt: skip


@pytest.fixture
def before(flavour: str, tmp_path: Path, old_hub_side: OldHubSide) -> Iterator[Fleet]:
    """The fleet on 0.1.0, every addon CR and hub copy with a status."""
    old = build(PREVIOUS / ROLLOUTS[flavour]).objects
    copies = crd_files(old, tmp_path) or [UPSTREAM / "observabilityaddons.crd.yaml"]
    tokens = {"admin": ADMIN, "hub-side": HUB_SIDE, "addon-manager": ADDON_MANAGER}
    for cluster in CLUSTERS:
        identity = render(find(old, "AddOnTemplate"), cluster).identity
        tokens[f"agent-{cluster}"] = UserInfo(identity.user, groups=identity.groups)
    with ExitStack() as stack:
        tls = TlsHub.started(stack, [*OCM_CRDS, *copies], tmp_path, tokens=tokens, rbac=True)
        tls.apply(PREVIOUS / ROLLOUTS[flavour])
        admin = tls.kube("admin")
        apply_objects(admin, ADDON_MANAGER_RBAC)
        spokes = []
        serving = Authority("spoke services", valid=dt.timedelta(days=365))
        for cluster in CLUSTERS:
            found = [cluster_namespace(cluster),
                     *(managed_cluster_addon(cluster, name) for name in MCAS[flavour])]  # fmt: skip
            apply_objects(admin, found + ([addon_cr(cluster)] if flavour == "acm" else []))
            rendered = addon_manager(tls, cluster)
            # 0.1.0 granted the addon manager no `bind` (OCM v1.3 refuses it the binding:
            # test_rollout's second test): a 0.1.0 operator bound the agent by hand
            apply_objects(admin, rendered.hub)
            spokes.append(start_spoke(stack, tls, rendered, cluster, serving, tmp_path / cluster))
        hub_side = stack.enter_context(old_hub_side(flavour, old, tls))
        fleet = Fleet(tls, spokes, hub_side, stack)
        for spoke in spokes:
            report(spoke, "operator", US)
            report(spoke, "collector", FS, MC)
        followed(fleet)
        yield fleet


def start_spoke(  # noqa: PLR0917 (one cluster's parts)
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
    replica = agent_pod(server, tls, rendered, cluster, root / "0.1.0")
    stack.enter_context(replica)
    ca = root / "serving-ca.crt"
    ca.write_bytes(serving.ca)
    return Spoke(cluster, server, root, rendered, replica, ca)


def agent_pod(
    server: APIServer, tls: TlsHub, rendered: Rendered, cluster: str, root: Path
) -> Replica:
    """The agent's pod: its rendered spec, its Secrets mounted (the serving pair as the spoke
    holds it now), on loopback ports."""
    hub_kubeconfig = tls.kubeconfig(f"agent-{cluster}")
    stored = server.get_object("", "v1", "secrets", ADDON_NAMESPACE, SERVING) or {}
    pair = {k: base64.b64decode(v) for k, v in (stored.get("data") or {}).items()}
    secrets = {"addon-status-hub-kubeconfig": {"kubeconfig": hub_kubeconfig}, SERVING: pair}
    return replica_for(rendered, root, secrets, connection(server, "controller"))


def kept_where(flavour: str) -> tuple[list[Ident], list[Ident]]:
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


def upgrade_fleet(flavour: str, fleet: Fleet) -> list[str]:
    """What the operator runs, and what OCM and the spokes' Deployment controllers do then;
    kubectl's lines of the rollout's apply."""
    tls = fleet.tls
    # the operator: the CRD step (seed), then the current rollout, as kubectl apply -k does
    if flavour == "seed":
        tls.apply(MANIFESTS / "hub" / "crd")
    applied = tls.apply(MANIFESTS / ROLLOUTS[flavour])
    current = build(MANIFESTS / ROLLOUTS[flavour]).objects
    # the hub side's Deployment changed: its pod is replaced
    fleet.hub_side.stop()
    new_side = fleet.stack.enter_context(hub_side_of(current, tls.connection("hub-side")))
    fleet.hub_side = new_side
    # OCM: the ClusterManagementAddOn names another template; each cluster's work is rendered
    # from it, the agent's RoleBinding re-applied as the addon manager (its bind is granted now)
    for spoke in fleet.spokes:
        rendered = addon_manager(tls, spoke.cluster)
        assert rendered.agent != spoke.rendered.agent
        apply_objects(tls.kube("addon-manager"), rendered.hub)
        gone = work_agent(spoke.server, "admin", spoke.rendered.agent, rendered.agent)
        assert gone == []  # 0.1.0's work lists nothing the current one does not
        # the Deployment controller replaces the pod (kubesim runs none): the old one stops,
        # releasing its Lease, and one from the new spec starts
        spoke.replica.stop()
        spoke.rendered = rendered
        spoke.replica = fleet.stack.enter_context(
            agent_pod(spoke.server, tls, rendered, spoke.cluster, spoke.root / "current")
        )
    for spoke in fleet.spokes:
        eventually(lambda s=spoke: s.replica.leading, f"{spoke.cluster}'s new agent leads")
    eventually(lambda: new_side.side.synced, "the new hub side synced")
    followed(fleet)
    owned = set(OWNED_TYPES) if flavour == "seed" else {"Degraded"}
    for cluster in CLUSTERS:
        eventually(lambda c=cluster: owned <= set(conditions_on(tls.server, c, SHOWN[flavour])),
                   f"{cluster}'s ManagedClusterAddOn shows the project's conditions")  # fmt: skip
    return applied


def uids(seen: dict[Ident, tuple[str, list[Obj]]]) -> dict[Ident, str]:
    return {where: uid for where, (uid, _) in seen.items()}
