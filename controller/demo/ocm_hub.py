"""The demo's hub, a whole Open Cluster Management hub once the fleet rollout is applied: it serves
OCM's kinds (the demo's copies of the CRDs the tests serve: upstream's, and the ones written to
OCM's API's shape) and holds what `kubectl apply -k manifests/ocm` and OCM leave on a hub, so that
`addon-status check hub` and `addon-status fleet -l` work on it as on a real one:

- the rollout (controller/demo/ocm, copies of manifests/ocm): its namespace, the
  ClusterManagementAddOn, the AddOnTemplate and AddOnDeploymentConfig, the Placement and its
  ManagedClusterSetBinding, the agents' hub ClusterRoles and the addon manager's `bind` grant,
  the admission policy that keeps each agent to its cluster and its binding;
- OCM's own: the `default` and `global` ManagedClusterSets, the addon manager's identity and
  its ClusterRole (RoleBindings, without `bind`), and for each cluster its ManagedCluster
  (labelled, accepted, a 60 s lease), its namespace and Lease, the ManagedClusterAddOn the addon
  manager makes for each cluster the Placement chose, and the PlacementDecision choosing them all.

What OCM's controllers write from there on (registration, ManifestWorks, conditions) the demo's
model of them writes while the demo runs (`ocm_writers`, `klusterlet`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import yaml

from controller.demo.addon_manager import Rendered
from controller.demo.ocm_model import LEASE_NAME, MANAGED_CLUSTER_ADDON, micro_time
from controller.hub.ocm import CLUSTER_LABEL
from kubesim import APIServer, UserInfo
from statemachines import object_names
from statemachines.errors import AddonStatusError

__all__ = [
    "ADDON_MANAGER",
    "ADDON_MANAGER_TOKEN",
    "HUB_SIDE",
    "HUB_SIDE_NAMESPACE",
    "HUB_TOKEN",
    "OCM_CRDS",
    "cluster_labels",
    "hub_server",
]

Obj = dict[str, Any]
CRDS: Final = Path(__file__).with_name("crds")
ROLLOUT: Final = Path(__file__).with_name("ocm")  # the rollout, as tests/manifests/ocm.py copies it
OCM_CRDS: Final = tuple(CRDS / f"{name}.yaml" for name in (
    "managedclusteraddons", "clustermanagementaddons", "addontemplates", "addondeploymentconfigs",
    "placements", "placementdecisions", "managedclusters", "managedclustersets",
    "managedclustersetbindings", "manifestworks"))  # fmt: skip
COPIES_CRD: Final = CRDS / "observabilityaddons.yaml"  # manifests/base/crd.yaml
ROLLOUT_FILES: Final = ("namespace", "clusterroles", "addon-manager", "agent-isolation",
                        "addontemplate", "addondeploymentconfig", "clustermanagementaddon",
                        "placement")  # fmt: skip
HUB_SIDE: Final = object_names.HUB_SIDE  # its Deployment and Lease, as manifests/ocm's
HUB_SIDE_NAMESPACE: Final = "addon-status"
HUB_TOKEN: Final = "demo-hub-token"  # a demo credential for the embedded hub; never a real one
ADDON_MANAGER_TOKEN: Final = "demo-addon-manager-token"
ADDON_MANAGER: Final = UserInfo(  # OCM's and MCE's addon manager, as RBAC sees it
    "system:serviceaccount:open-cluster-management-hub:addon-manager-controller-sa",
    groups=("system:serviceaccounts", "system:serviceaccounts:open-cluster-management-hub"),
)
PLACEMENT_LABEL: Final = "cluster.open-cluster-management.io/placement"
_RBAC: Final = "rbac.authorization.k8s.io"
_CLUSTER_API: Final = "cluster.open-cluster-management.io"
_REGIONS: Final = ("eu-west-1", "us-east-1", "ap-south-1")


def cluster_labels(index: int) -> dict[str, str]:
    """The labels of the demo's cluster `index` (from 1): OCM's own, and the ones a fleet is
    sliced by (`addon-status fleet -l env=prod`): odd clusters are prod, even ones staging."""
    return {
        "name": f"cluster{index}",
        f"{_CLUSTER_API}/clusterset": "default",
        "env": "prod" if index % 2 else "staging",
        "region": _REGIONS[(index - 1) % len(_REGIONS)],
    }


@contextmanager
def hub_server(
    rendered: Mapping[str, Rendered],
    tokens: Mapping[str, UserInfo],
    clock: Callable[[], datetime] | None = None,
) -> Iterator[APIServer]:
    """The hub API server as the module docstring says, authorizing with RBAC: the demo's
    administrator (HUB_TOKEN), the addon manager (ADDON_MANAGER_TOKEN) and `tokens` (the
    agents'). A request without credentials reads everything (kube-apiserver's
    --anonymous-auth and a role bound to system:unauthenticated): kubectl sends no bearer token
    over plain HTTP, and `kubectl get` is part of the demo. `clock`: the fleet's story time,
    which it stamps and tells (`Date`)."""
    users = {HUB_TOKEN: UserInfo("demo-admin", groups=("system:masters",)),
             ADDON_MANAGER_TOKEN: ADDON_MANAGER, **tokens}  # fmt: skip
    crds = [_served(path) for path in (COPIES_CRD, *OCM_CRDS)]
    hub = APIServer(crds, namespaces=["default"], tokens=users, anonymous=True, rbac=True,
                    clock=clock)  # fmt: skip
    now = (clock or (lambda: datetime.now(UTC)))()
    with hub:
        for obj in _rollout():
            _put(hub, obj)
        for obj in _ocm(list(rendered), now):
            _put(hub, obj)
        yield hub


def _served(path: Path) -> Path:
    if not path.exists():
        raise AddonStatusError(f"{path}: the CRD is missing; reinstall addon-status")
    return path


def _put(hub: APIServer, obj: Mapping[str, Any]) -> None:
    group, _, version = str(obj["apiVersion"]).rpartition("/")
    hub.put_object(group, version, hub.plural_of(obj["apiVersion"], obj["kind"]), obj)


def _rollout() -> list[Obj]:
    """What `kubectl apply -k manifests/ocm` puts on the hub, and a role letting anonymous
    requests read. The hub side runs in the demo's process: its Deployment stands for it, ready
    as a kubelet would report one replica (`check hub` reads it, and the Lease it holds)."""
    objects = [*_readers(), _hub_side_deployment()]
    for name in ROLLOUT_FILES:
        text = (ROLLOUT / f"{name}.yaml").read_text("utf-8")
        objects += [obj for obj in yaml.safe_load_all(text) if obj]
    return objects


def _hub_side_deployment() -> Obj:
    labels = {"app.kubernetes.io/name": HUB_SIDE, "app.kubernetes.io/part-of": "addon-status"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": HUB_SIDE, "namespace": HUB_SIDE_NAMESPACE, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                 "template": {"metadata": {"labels": labels}, "spec": {"containers": [
                     {"name": "hub-controller", "image": "addon-status:demo"}]}}},
        "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1},
    }  # fmt: skip


def _readers() -> list[Obj]:
    ref = {"apiGroup": _RBAC, "kind": "ClusterRole", "name": "demo-readers"}
    return [
        {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "demo-readers"},
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
                   {"nonResourceURLs": ["*"], "verbs": ["get"]}]},
        {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "demo-readers"}, "roleRef": ref,
         "subjects": [{"apiGroup": _RBAC, "kind": "Group", "name": "system:unauthenticated"}]},
    ]  # fmt: skip


def _ocm(clusters: list[str], now: datetime) -> list[Obj]:
    """What OCM holds on the hub once each cluster joined and the Placement chose it."""
    manager = "open-cluster-management:addon-manager-controller"
    objects: list[Obj] = [
        # OCM v1.3's addon manager may write RoleBindings and Roles, without `bind`/`escalate`
        {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": manager},
         "rules": [{"apiGroups": [_RBAC], "resources": ["rolebindings", "roles"],
                    "verbs": ["get", "list", "watch", "create", "update", "delete"]}]},
        {"apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": manager},
         "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": manager},
         "subjects": [{"kind": "ServiceAccount", "name": "addon-manager-controller-sa",
                       "namespace": "open-cluster-management-hub"}]},
        _cluster_set("default", {"selectorType": "ExclusiveClusterSetLabel"}),
        _cluster_set("global", {"selectorType": "LabelSelector", "labelSelector": {}}),
    ]  # fmt: skip
    cma = "addon-status"
    for index, cluster in enumerate(clusters, start=1):
        objects += [
            {"apiVersion": f"{_CLUSTER_API}/v1", "kind": "ManagedCluster",
             "metadata": {"name": cluster, "labels": cluster_labels(index)},
             "spec": {"hubAcceptsClient": True, "leaseDurationSeconds": 60}},
            {"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": cluster, "labels": {CLUSTER_LABEL: cluster}}},
            {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": LEASE_NAME, "namespace": cluster,
                          "labels": {CLUSTER_LABEL: cluster}},
             "spec": {"holderIdentity": LEASE_NAME, "renewTime": micro_time(now)}},
            {"apiVersion": MANAGED_CLUSTER_ADDON.api_version, "kind": MANAGED_CLUSTER_ADDON.kind,
             "metadata": {"name": cma, "namespace": cluster},
             "spec": {"installNamespace": "open-cluster-management-agent-addon"}},
        ]  # fmt: skip
    objects.append({
        "apiVersion": f"{_CLUSTER_API}/v1beta1", "kind": "PlacementDecision",
        "metadata": {"name": f"{cma}-decision-1", "namespace": cma,
                     "labels": {PLACEMENT_LABEL: cma}},
        "status": {"decisions": [{"clusterName": c, "reason": ""} for c in clusters]},
    })  # fmt: skip
    return objects


def _cluster_set(name: str, selector: Obj) -> Obj:
    return {"apiVersion": f"{_CLUSTER_API}/v1beta2", "kind": "ManagedClusterSet",
            "metadata": {"name": name}, "spec": {"clusterSelector": selector}}  # fmt: skip
