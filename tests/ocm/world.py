"""The world of the fleet rollout tests: a hub after `kubectl apply -k manifests/ocm` (or
`manifests/ocm/acm`, `manifests/ocm/beside`) with what Open Cluster Management does for each
cluster, two spokes running the rendered agent, and the hub side; fixtures (re-exported by
conftest.py) and helpers. The `flavour` fixture runs the flavours whose addon CRs are MCO's
kind (`check hub` reads only that kind, and release 0.1.0 had only these); a test that runs
beside too parametrizes `flavour` over ROLLOUTS itself."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.demo.addon_manager import Rendered, render
from controller.hub.app import HubReplica
from controller.hub.mirror import cluster_namespace, managed_cluster_addon
from controller.kube.api import ADDON, OWN_ADDON, ApiResource
from controller.kube.connection import Connection
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.spoke.app import Replica
from controller.spoke.options import Address, RunOptions
from kubesim import APIServer, UserInfo
from tests.certificates import Authority
from tests.manifests.kustomize import MANIFESTS, ROOT, build, find
from tests.manifests.pod import mounted, pod_args, pod_environment, run_parser
from tests.ocm.releases import hub_side_of
from tests.support import apply_objects, connection, kube_of

Obj = dict[str, Any]
CLUSTERS = ("cluster1", "cluster2")
ADDON_NAMESPACE = "open-cluster-management-addon-observability"
COPY = "observability-addon"
# each flavour's hub copy (and spoke CR): its kind and name; beside, the project's own kind
COPIES: dict[str, tuple[ApiResource, str]] = {
    "seed": (ADDON, COPY),
    "acm": (ADDON, COPY),
    "beside": (OWN_ADDON, "addon-status"),
}
MANAGED_ADDON = {
    "seed": "addon-status",
    "acm": "observability-controller",
    "beside": "addon-status",  # the rollout's own, never MCO's observability-controller
}  # what the hub side writes
UPSTREAM = ROOT / "tests" / "data" / "upstream"
OCM_CRDS = [
    *(UPSTREAM / f"{name}.crd.yaml" for name in ("clustermanagementaddons", "addontemplates",
      "addondeploymentconfigs", "placements", "managedclusteraddons")),
    *(ROOT / "tests/data/crds" / f"{name}.cluster.open-cluster-management.io.yaml"
      for name in ("managedclustersetbindings", "managedclusters", "placementdecisions")),
]  # fmt: skip
ROLLOUTS = {
    "seed": MANIFESTS / "ocm",
    "acm": MANIFESTS / "ocm" / "acm",
    "beside": MANIFESTS / "ocm" / "beside",
}
# the copies' CRD, a step of its own before the rollout (acm: MCO's, already there)
CRD_STEPS = {"seed": MANIFESTS / "hub" / "crd", "beside": MANIFESTS / "hub" / "crd-own-kind"}
ADMIN = UserInfo("kubernetes-admin", groups=("system:masters",))
LOOPBACK = Address(host="127.0.0.1", port=0)


def service_account(namespace: str, name: str) -> UserInfo:
    groups = ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")
    return UserInfo(f"system:serviceaccount:{namespace}:{name}", groups=groups)


CONTROLLER = service_account(ADDON_NAMESPACE, "addon-status-controller")
OPERATOR = service_account(ADDON_NAMESPACE, "endpoint-observability-operator-sa")
COLLECTOR = service_account(ADDON_NAMESPACE, "metrics-collector-sa")
HUB_SIDE = service_account("addon-status", "addon-status-hub-controller")
ADDON_MANAGER = service_account("open-cluster-management-hub", "addon-manager-controller-sa")
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


def crd_files(objects: list[Obj], directory: Path) -> list[Path]:
    """The CRDs of `objects` as files: kubesim serves CRDs from files, where kubectl would
    create them first and wait for them to be established."""
    paths = []
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        paths.append(directory / f"{crd['metadata']['name']}.yaml")
        paths[-1].write_text(yaml.safe_dump(crd), encoding="utf-8")
    return paths


def not_crds(objects: list[Obj]) -> list[Obj]:
    return [o for o in objects if o["kind"] != "CustomResourceDefinition"]


@dataclass
class Spoke:
    cluster: str
    server: APIServer
    replica: Replica
    rendered: Rendered
    ca: Path


@pytest.fixture(params=["acm", "seed"])
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
    # seed, beside: the copies' CRD is the step before the rollout, never in it
    crd_step = build(CRD_STEPS[flavour]).objects if flavour in CRD_STEPS else []
    mcos = flavour != "seed"  # ACM's observability operator runs: its CRD, copies and MCA
    copies_crd = [UPSTREAM / "observabilityaddons.crd.yaml"] if mcos else []
    copies_crd += crd_files(crd_step, tmp_path)
    tokens = {"admin": ADMIN, "hub-side": HUB_SIDE, "addon-manager": ADDON_MANAGER}
    for cluster in CLUSTERS:
        identity = rendered_for(rollout, cluster).identity
        tokens[f"agent-{cluster}"] = UserInfo(identity.user, groups=identity.groups)
    crds = [*OCM_CRDS, *copies_crd, *crd_files(rollout, tmp_path)]
    with APIServer(crds, tokens=tokens, rbac=True) as server:
        admin = kube_of(server, "admin")
        apply_objects(admin, [*not_crds(rollout), *ADDON_MANAGER_RBAC])
        for cluster in CLUSTERS:
            found = [
                cluster_namespace(cluster),
                managed_cluster_addon(cluster, MANAGED_ADDON[flavour]),
            ]
            if mcos:
                found.append(addon_cr(cluster))
            if flavour == "beside":  # MCO's row in the console, beside the rollout's own
                found.append(managed_cluster_addon(cluster, "observability-controller"))
            apply_objects(admin, found)
            apply_objects(kube_of(server, "addon-manager"), rendered_for(rollout, cluster).hub)
        yield server


def rendered_for(rollout: list[Obj], cluster: str) -> Rendered:
    return render(find(rollout, "AddOnTemplate"), cluster, find(rollout, "AddOnDeploymentConfig"))


def addon_cr(namespace: str) -> Obj:
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
    serving = Authority("spoke services", valid=dt.timedelta(days=365))
    try:
        for cluster in CLUSTERS:
            rendered = rendered_for(rollout, cluster)
            root = tmp_path / cluster
            root.mkdir()
            crds = crd_files(rendered.agent, root)
            if flavour != "seed":  # MCO's, there already (beside: beside the project's own)
                crds.append(UPSTREAM / "observabilityaddons.crd.yaml")
            server = APIServer(crds, tokens=tokens, rbac=True).start()
            admin = kube_of(server, "admin")
            # the observability addon's own: its namespace and CR (beside, MCO's, which the
            # project leaves alone: the template carries the project's own kind)
            namespace = {
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": ADDON_NAMESPACE},
            }
            apply_objects(admin, [namespace, addon_cr(ADDON_NAMESPACE)])
            apply_objects(admin, not_crds(rendered.agent))  # the work agent
            pair = serving.server()
            hub_kubeconfig = kubeconfig_yaml(server=hub.url, token=f"agent-{cluster}").encode()
            secrets = {
                "addon-status-hub-kubeconfig": {"kubeconfig": hub_kubeconfig},
                "addon-status-serving-cert": {"tls.crt": pair.cert, "tls.key": pair.key},
            }
            replica = replica_for(rendered, root, secrets, connection(server, "controller"))
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


def replica_for(
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
    replica = hub_side_of(rollout, connection(hub, "hub-side"))
    replica.start()
    yield replica
    replica.stop()


def copy_status(server: APIServer, namespace: str, flavour: str = "seed") -> Obj:
    """The status of `flavour`'s addon CR in `namespace` (a spoke's, or a hub copy)."""
    kind, name = COPIES[flavour]
    found = server.get_object(kind.group, kind.version, kind.plural, namespace, name)
    return (found or {}).get("status") or {}


def sorted_conditions(status: Obj) -> list[Obj]:
    return sorted(status.get("conditions") or [], key=lambda c: c["type"])
