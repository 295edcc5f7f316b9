"""The fleet rollout end to end, with authorization on everywhere (kubesim's RBAC, as
kube-apiserver's): `kubectl apply -k manifests/ocm` (or `manifests/ocm/acm`) on a hub that
serves Open Cluster Management's CRDs validates and applies as is; the AddOnTemplate, rendered
for `cluster1` and `cluster2` as the addon manager renders it (`controller.demo.addon_manager`),
is applied to two spokes as the work agent applies a ManifestWork, with the RoleBinding that
`hubPermissions` creates on the hub, created as OCM v1.3's addon manager creates it: as its own
service account (whose ClusterRole may write RoleBindings but not `bind`; the rollout grants
`bind` on its roles, and kubesim applies kube-apiserver's escalation check), binding the agent's
user and both its groups; each spoke's controller then runs from its rendered pod (args,
settings, mounted ConfigMaps and Secrets) as its service account on the spoke and as its
registration identity on the hub (a token mapped to that user and groups), and the hub side
runs from its Deployment as its service account.

What must hold: not one call is denied on any server; each agent writes only its own cluster's
namespace on the hub, and `cluster2`'s identity, which RBAC now lets in through the group every
agent holds, is refused a write of `cluster1`'s copy by the rollout's admission policy; every
rule of the hub permission is used; the hub copies follow the spokes, the hub side mirrors both
clusters onto their ManagedClusterAddOns (the conditions it owns), and `fleet` lists both."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.cli import main
from controller.demo.addon_manager import Rendered, render
from controller.hub.app import HubReplica
from controller.hub.mirror import OWNED_TYPES, cluster_namespace, managed_cluster_addon
from controller.hub.options import HubOptions, add_hub_flags
from controller.kube.api import ForbiddenError
from controller.kube.connection import Connection
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.reports.client import ReportClient
from controller.spoke.app import Replica
from controller.spoke.options import Address, RunOptions
from kubesim import APIServer, UserInfo
from tests.certificates import Authority
from tests.manifests.kustomize import MANIFESTS, ROOT, build, find
from tests.manifests.pod import mounted, pod_args, pod_environment, run_parser
from tests.support import MC, WAIT, apply_objects, connection, eventually, kube_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]

Obj = dict[str, Any]
CLUSTERS = ("cluster1", "cluster2")
ADDON_NAMESPACE = "open-cluster-management-addon-observability"
COPY = "observability-addon"
MANAGED_ADDON = {
    "seed": "addon-status",
    "acm": "observability-controller",
}  # what the hub side writes
UPSTREAM = ROOT / "tests" / "data" / "upstream"
OCM_CRDS = [
    *(UPSTREAM / f"{name}.crd.yaml" for name in ("clustermanagementaddons", "addontemplates",
      "addondeploymentconfigs", "placements", "managedclusteraddons")),
    ROOT / "tests/data/crds/managedclustersetbindings.cluster.open-cluster-management.io.yaml",
]  # fmt: skip
ROLLOUTS = {"seed": MANIFESTS / "ocm", "acm": MANIFESTS / "ocm" / "acm"}
ADMIN = UserInfo("kubernetes-admin", groups=("system:masters",))
LOOPBACK = Address(host="127.0.0.1", port=0)


def _service_account(namespace: str, name: str) -> UserInfo:
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
    return UserInfo(f"system:serviceaccount:{namespace}:{name}", groups=groups)


CONTROLLER = _service_account(ADDON_NAMESPACE, "addon-status-controller")
OPERATOR = _service_account(ADDON_NAMESPACE, "endpoint-observability-operator-sa")
COLLECTOR = _service_account(ADDON_NAMESPACE, "metrics-collector-sa")
HUB_SIDE = _service_account("addon-status", "addon-status-hub-controller")
ADDON_MANAGER = _service_account("open-cluster-management-hub", "addon-manager-controller-sa")
RBAC = "rbac.authorization.k8s.io"
# What OCM v1.3's addon manager may do with RBAC objects, as its own ClusterRole grants
# (manifests/cluster-manager/hub/addon-manager/clusterrole.yaml in OCM): write RoleBindings and
# Roles, without `bind` or `escalate`.
ADDON_MANAGER_RBAC: list[Obj] = [
    {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
     "metadata": {"name": "open-cluster-management:addon-manager-controller"},
     "rules": [{"apiGroups": [RBAC], "resources": ["rolebindings", "roles"],
                "verbs": ["get", "list", "watch", "create", "update", "delete"]}]},
    {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
     "metadata": {"name": "open-cluster-management:addon-manager-controller"},
     "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole",
                 "name": "open-cluster-management:addon-manager-controller"},
     "subjects": [{"kind": "ServiceAccount", "name": "addon-manager-controller-sa",
                   "namespace": "open-cluster-management-hub"}]},
]  # fmt: skip


def _crd_files(objects: list[Obj], directory: Path) -> list[Path]:
    """The CRDs of `objects` as files: kubesim serves CRDs from files, where kubectl would
    create them first and wait for them to be established."""
    paths = []
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        paths.append(directory / f"{crd['metadata']['name']}.yaml")
        paths[-1].write_text(yaml.safe_dump(crd), encoding="utf-8")
    return paths


def _not_crds(objects: list[Obj]) -> list[Obj]:
    return [o for o in objects if o["kind"] != "CustomResourceDefinition"]


@dataclass
class Spoke:
    cluster: str
    server: APIServer
    replica: Replica
    rendered: Rendered
    ca: Path


@pytest.fixture(params=sorted(ROLLOUTS))
def flavour(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def rollout(flavour: str) -> list[Obj]:
    return build(ROLLOUTS[flavour]).objects


@pytest.fixture
def hub(flavour: str, rollout: list[Obj], tmp_path: Path) -> Iterator[APIServer]:
    """The hub after `kubectl apply -k` of the rollout, and what Open Cluster Management does
    for each cluster: its namespace, the observed addon's ManagedClusterAddOn and (acm: the
    observability operator's) hub copy, and the RoleBinding of `hubPermissions`."""
    copies_crd = [UPSTREAM / "observabilityaddons.crd.yaml"] if flavour == "acm" else []
    tokens = {"admin": ADMIN, "hub-side": HUB_SIDE, "addon-manager": ADDON_MANAGER}
    for cluster in CLUSTERS:
        identity = _rendered(rollout, cluster).identity
        tokens[f"agent-{cluster}"] = UserInfo(identity.user, groups=identity.groups)
    crds = [*OCM_CRDS, *copies_crd, *_crd_files(rollout, tmp_path)]
    with APIServer(crds, tokens=tokens, rbac=True) as server:
        admin = kube_of(server, "admin")
        apply_objects(admin, [*_not_crds(rollout), *ADDON_MANAGER_RBAC])
        for cluster in CLUSTERS:
            found = [
                cluster_namespace(cluster),
                managed_cluster_addon(cluster, MANAGED_ADDON[flavour]),
            ]
            if flavour == "acm":
                found.append(_addon_cr(cluster))
            apply_objects(admin, found)
            apply_objects(kube_of(server, "addon-manager"), _rendered(rollout, cluster).hub)
        yield server


def _rendered(rollout: list[Obj], cluster: str) -> Rendered:
    return render(find(rollout, "AddOnTemplate"), cluster, find(rollout, "AddOnDeploymentConfig"))


def _addon_cr(namespace: str) -> Obj:
    return {
        "apiVersion": "observability.open-cluster-management.io/v1beta1",
        "kind": "ObservabilityAddon",
        "metadata": {"name": COPY, "namespace": namespace},
        "spec": {"enableMetrics": True, "interval": 300},
    }


@pytest.fixture
def spokes(
    flavour: str, rollout: list[Obj], hub: APIServer, tmp_path: Path
) -> Iterator[list[Spoke]]:
    started: list[Spoke] = []
    tokens = {
        "admin": ADMIN,
        "controller": CONTROLLER,
        "operator": OPERATOR,
        "collector": COLLECTOR,
    }
    serving = Authority("spoke services")
    try:
        for cluster in CLUSTERS:
            rendered = _rendered(rollout, cluster)
            root = tmp_path / cluster
            root.mkdir()
            crds = _crd_files(rendered.agent, root) or [UPSTREAM / "observabilityaddons.crd.yaml"]
            server = APIServer(crds, tokens=tokens, rbac=True).start()
            admin = kube_of(server, "admin")
            # the observability addon's own: its namespace and CR
            namespace = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ADDON_NAMESPACE},
            }
            apply_objects(admin, [namespace, _addon_cr(ADDON_NAMESPACE)])
            apply_objects(admin, _not_crds(rendered.agent))  # the work agent
            pair = serving.server()
            hub_kubeconfig = kubeconfig_yaml(server=hub.url, token=f"agent-{cluster}").encode()
            secrets = {
                "addon-status-hub-kubeconfig": {"kubeconfig": hub_kubeconfig},
                "addon-status-serving-cert": {"tls.crt": pair.cert, "tls.key": pair.key},
            }
            replica = _replica(rendered, root, secrets, connection(server, "controller"))
            ca = root / "serving-ca.crt"
            issued = server.get_object("", "v1", "configmaps", ADDON_NAMESPACE,
                                       "addon-status-serving-cert-ca")  # fmt: skip
            # seed: the controller issued its own and published its CA for the reporters
            ca.write_bytes(issued["data"]["ca.crt"].encode() if issued else serving.ca)
            started.append(Spoke(cluster, server, replica, rendered, ca))
            replica.start()
        yield started
    finally:
        for spoke in started:
            spoke.replica.stop()
            spoke.server.stop()


def _replica(
    rendered: Rendered, root: Path, secrets: dict[str, dict[str, bytes]], api: Connection
) -> Replica:
    """`addon-status run` as the rendered pod starts it, on loopback ports."""
    deployment = find(rendered.agent, "Deployment", "addon-status-controller")
    mounts = mounted(rendered.agent, deployment, root / "volumes", secrets)
    command, *args = pod_args(deployment, mounts)
    assert command == "run"
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", **pod_environment(rendered.agent, deployment)}
    options = RunOptions.from_args(run_parser().parse_args(args), environ)
    options = options.model_copy(update={
        "metrics_address": LOOPBACK, "probe_address": LOOPBACK, "report_address": "127.0.0.1:0",
    })  # fmt: skip
    return Replica(options, api_client=api)


@pytest.fixture
def hub_side(rollout: list[Obj], hub: APIServer) -> Iterator[HubReplica]:
    deployment = find(rollout, "Deployment", "addon-status-hub-controller")
    command, *args = pod_args(deployment, {})
    assert command == "hub"
    parser = argparse.ArgumentParser()
    add_hub_flags(parser)
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", **pod_environment(rollout, deployment)}
    options = HubOptions.from_args(parser.parse_args(args), environ)
    options = options.model_copy(update={"lease_namespace": environ["POD_NAMESPACE"]})
    replica = HubReplica(options, connection(hub, "hub-side"), serve=False)
    replica.start()
    yield replica
    replica.stop()


def _status(server: APIServer, namespace: str) -> Obj:
    found = server.get_object("observability.open-cluster-management.io", "v1beta1",
                              "observabilityaddons", namespace, COPY)  # fmt: skip
    return (found or {}).get("status") or {}


def _conditions(status: Obj) -> list[Obj]:
    return sorted(status.get("conditions") or [], key=lambda c: c["type"])


def test_the_rollout_runs_every_cluster_with_least_privilege(  # noqa: PLR0917 (fixtures)
    flavour: str,
    rollout: list[Obj],
    hub: APIServer,
    spokes: list[Spoke],
    hub_side: HubReplica,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for spoke in spokes:
        url = spoke.replica.report_url
        with ReportClient(url, token="operator", ca_file=str(spoke.ca), deadline=WAIT) as operator:
            assert (
                operator.report(reason="UpdateSuccessful", message="deployed")["verdict"]
                == "accepted"
            )
        with ReportClient(
            url, token="collector", ca_file=str(spoke.ca), deadline=WAIT
        ) as collector:
            assert collector.report(MC, reason="ForwardSuccessful")["verdict"] == "accepted"
    for spoke in spokes:
        eventually(
            lambda s=spoke: (
                _conditions(_status(hub, s.cluster))
                == _conditions(_status(s.server, ADDON_NAMESPACE))
            ),
            f"{spoke.cluster}'s hub copy follows its spoke",
            timeout=3 * WAIT,
        )

    def mirrored(cluster: str) -> bool:
        found = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                               "managedclusteraddons", cluster, MANAGED_ADDON[flavour])  # fmt: skip
        found = found or {}
        types = {c["type"] for c in (found.get("status") or {}).get("conditions") or []}
        owned = set(OWNED_TYPES) if flavour == "seed" else {"Degraded"}
        return types == owned  # and never OCM's Available or Progressing

    for cluster in CLUSTERS:
        eventually(lambda c=cluster: mirrored(c), f"{cluster} mirrored", timeout=3 * WAIT)

    kubeconfig = tmp_path / "admin-kubeconfig"
    kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token="admin"), encoding="utf-8")
    capsys.readouterr()
    assert main(["fleet", "--kubeconfig", str(kubeconfig)]) == 0
    table = capsys.readouterr().out
    assert all(cluster in table for cluster in CLUSTERS), table

    records = hub.audit  # every call so far, before the test's own probe below
    assert [r for r in records if r.code == 403] == []
    for spoke in spokes:
        assert [r for r in spoke.server.audit if r.code == 403] == [], spoke.cluster
    # each agent worked in its own namespace only, and used every rule of its hub permission
    wanted = {("get", ""), ("update", "status")} | (
        {("create", "")} if flavour == "seed" else set()
    )
    for spoke in spokes:
        calls = [r for r in records if r.user == spoke.rendered.identity.user]
        assert {r.namespace for r in calls} == {spoke.cluster}
        assert {(r.verb, r.subresource) for r in calls} == wanted

    # cluster2's identity may read cluster1's copy (RBAC: the group every agent holds), but
    # the admission policy refuses it a write, whatever it writes
    intruder = kube_of(hub, "agent-cluster2")
    copies = intruder.discover(
        "observability.open-cluster-management.io/v1beta1", "ObservabilityAddon"
    )
    forged = intruder.get(copies, "cluster1", COPY)
    forged["status"] = {"conditions": [{
        "type": "Degraded", "status": "True", "reason": "Forged", "message": "",
        "lastTransitionTime": "2026-11-27T00:00:00Z"}]}  # fmt: skip
    with pytest.raises(ForbiddenError) as refused:
        intruder.replace_status(copies, "cluster1", COPY, forged)
    # the policy's words, not the authorizer's ("cannot update resource ...")
    assert "ValidatingAdmissionPolicy 'addon-status-agent-isolation'" in str(refused.value)


def test_without_the_rollouts_bind_grant_the_addon_manager_is_refused_the_binding(
    rollout: list[Obj],
) -> None:
    """What OCM v1.3 shows as `RegistrationApplied=False, SetPermissionFailed`: kube-apiserver's
    escalation check refuses the addon manager a RoleBinding to a role whose rules it does not
    hold, unless the rollout grants it `bind` on that role (manifests/ocm/common)."""
    without = [
        o for o in _not_crds(rollout) if o["metadata"]["name"] != "addon-status:addon-manager"
    ]
    tokens = {"admin": ADMIN, "addon-manager": ADDON_MANAGER}
    crds = [*OCM_CRDS, UPSTREAM / "observabilityaddons.crd.yaml"]
    with APIServer(crds, tokens=tokens, rbac=True) as server:
        apply_objects(kube_of(server, "admin"), [*without, *ADDON_MANAGER_RBAC,
                                                 cluster_namespace("cluster1")])  # fmt: skip
        [binding] = _rendered(rollout, "cluster1").hub
        with pytest.raises(ForbiddenError) as refused:
            apply_objects(kube_of(server, "addon-manager"), [binding])
    # the escalation check's words ("user ... is attempting to grant RBAC permissions not
    # currently held", cut by the seam), not the authorizer's ("User ... cannot create")
    assert '" is forbidden: user "system:serviceaccount:open-cluster-management-hub:' in str(
        refused.value
    )
