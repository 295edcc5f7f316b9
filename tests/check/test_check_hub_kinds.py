"""`addon-status check hub --addon-kind`: the hub copies of either way on ACM (docs/spec.md §12.1)
— ACM's `ObservabilityAddon` (the default) or, beside ACM's observability operator, the
project's own `AddonStatus` copies named `addon-status` beside the ManagedClusterAddOn
`addon-status`. A hub after the beside way's rollout (its copies' CRD from
manifests/hub/crd-own-kind, no `ObservabilityAddon` CRD of the project's) passes the copies'
checks with `--addon-kind AddonStatus`, and the default names the CRD it misses and where it
comes from. kubesim with RBAC off answers every SubjectAccessReview allowed, as kube-apiserver
with `--authorization-mode=AlwaysAllow`; the rollout's own objects are tests/ocm's concern."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.hub.mirror import managed_cluster_addon
from controller.hub.ocm import MANAGED_CLUSTER_ADDON
from controller.kube.api import OWN_ADDON, ApiResource
from controller.kube.kubeconfig import kubeconfig_yaml
from kubesim import DEFAULT_NAMESPACES, APIServer
from tests.own_kind import own_kind_crd
from tests.support import apply_objects, kube_of

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
OCM_CRDS = [
    *(ROOT / "tests/data/upstream" / f"{name}.crd.yaml" for name in ("clustermanagementaddons",
      "addontemplates", "addondeploymentconfigs", "placements", "managedclusteraddons")),
    *(ROOT / "tests/data/crds" / f"{name}.cluster.open-cluster-management.io.yaml"
      for name in ("managedclusters", "placementdecisions")),
]  # fmt: skip
PLACEMENTS = "cluster.open-cluster-management.io/v1beta1"
DECISIONS = ApiResource(
    "cluster.open-cluster-management.io", "v1beta1", "placementdecisions", "PlacementDecision"
)
ADDON_API = "addon.open-cluster-management.io/v1alpha1"
ADMISSION = "admissionregistration.k8s.io/v1"
LOST = ("cluster.open-cluster-management.io/unreachable",
        "cluster.open-cluster-management.io/unavailable")  # fmt: skip
NOW = "2026-11-28T00:00:00Z"


def _went_well(type_: str) -> dict[str, Any]:
    return {"type": type_, "status": "True", "reason": "Done", "message": "",
            "lastTransitionTime": NOW}  # fmt: skip


def _beside_rollout(hub: APIServer) -> None:
    """What the beside way's rollout and OCM leave on a hub with one cluster chosen: the
    ClusterManagementAddOn and its Placement's decision, the admission policy in force,
    cluster1's ManagedClusterAddOn `addon-status` registered, applied and available, and its
    agent's `AddonStatus` copy `addon-status` with conditions."""
    admin = kube_of(hub, "admin")
    apply_objects(admin, [
        {"apiVersion": ADDON_API, "kind": "ClusterManagementAddOn",
         "metadata": {"name": "addon-status"},
         "spec": {"installStrategy": {"type": "Placements", "placements": [
             {"name": "addon-status", "namespace": "addon-status"}]}}},
        {"apiVersion": PLACEMENTS, "kind": "Placement",
         "metadata": {"name": "addon-status", "namespace": "addon-status"},
         "spec": {"tolerations": [{"key": k, "operator": "Exists"} for k in LOST]}},
        {"apiVersion": DECISIONS.api_version, "kind": DECISIONS.kind,
         "metadata": {"name": "addon-status-decision-1", "namespace": "addon-status",
                      "labels": {"cluster.open-cluster-management.io/placement": "addon-status"}}},
        {"apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicy",
         "metadata": {"name": "addon-status-agent-isolation"},
         "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
             {"apiGroups": [OWN_ADDON.group], "apiVersions": ["*"],
              "operations": ["CREATE", "UPDATE"], "resources": [OWN_ADDON.plural]}]},
             "validations": [{"expression": "true"}]}},
        {"apiVersion": ADMISSION, "kind": "ValidatingAdmissionPolicyBinding",
         "metadata": {"name": "addon-status-agent-isolation"},
         "spec": {"policyName": "addon-status-agent-isolation", "validationActions": ["Deny"]}},
    ])  # fmt: skip
    decisions = {"status": {"decisions": [{"clusterName": "cluster1", "reason": ""}]}}
    admin.patch_status(DECISIONS, "addon-status", "addon-status-decision-1", decisions)
    admin.create(MANAGED_CLUSTER_ADDON, "cluster1", managed_cluster_addon("cluster1"))
    conditions = [_went_well(t) for t in ("RegistrationApplied", "ManifestApplied", "Available")]
    admin.patch_status(MANAGED_CLUSTER_ADDON, "cluster1", "addon-status",
                       {"status": {"conditions": conditions}})  # fmt: skip
    copies = admin.discover(OWN_ADDON.api_version, OWN_ADDON.kind)
    copy = {"apiVersion": OWN_ADDON.api_version, "kind": OWN_ADDON.kind,
            "metadata": {"name": "addon-status", "namespace": "cluster1"}}  # fmt: skip
    admin.create(copies, "cluster1", copy)
    admin.patch_status(copies, "cluster1", "addon-status",
                       {"status": {"conditions": [_went_well("Available")]}})  # fmt: skip


@pytest.fixture
def beside_hub(tmp_path: Path) -> Any:
    crds = [*OCM_CRDS, own_kind_crd(tmp_path)]
    namespaces = [*DEFAULT_NAMESPACES, "addon-status", "cluster1"]
    with APIServer(crds, namespaces=namespaces, anonymous=True) as hub:
        _beside_rollout(hub)
        kubeconfig = tmp_path / "hub.kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token="admin"), encoding="utf-8")
        yield kubeconfig


def _check_hub(kubeconfig: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    capsys.readouterr()
    main(["check", "hub", "--kubeconfig", str(kubeconfig), *flags])
    return capsys.readouterr().out


def test_the_beside_way_is_checked_with_the_own_kind(
    beside_hub: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _check_hub(beside_hub, capsys, "--addon-kind", "AddonStatus")
    assert "✔ Open Cluster Management's kinds and the hub copies' are served (8)" in out
    assert "✔ ClusterManagementAddOn addon-status exists" in out
    assert "✔ 1 of 1 clusters: registered, manifests applied, the hub copy kept by a running " \
           "agent" in out  # fmt: skip
    assert "cluster1/observability-addon" not in out
    failed = [line for line in out.splitlines() if line.startswith("✘")]
    assert all("hub side" in line for line in failed), out  # no hub side runs here


def test_a_copy_of_the_own_kind_missing_is_named_by_its_name(
    beside_hub: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _check_hub(
        beside_hub, capsys, "--addon-kind", "AddonStatus", "--copy-name", "observability-addon"
    )
    assert "✘ the hub copy cluster1/observability-addon does not exist" in out


def test_by_default_the_copies_of_acms_kind_are_looked_for_and_their_crd_named(
    beside_hub: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _check_hub(beside_hub, capsys)
    assert (
        "✘ ObservabilityAddon observability.open-cluster-management.io/v1beta1 is not served: "
        "the copies' CRD: kubectl apply -k manifests/hub/crd (once, before the rollout)"
    ) in out
    assert "ClusterManagementAddOn addon-status exists" not in out  # it stops there


def test_an_unknown_kind_is_a_usage_error(
    beside_hub: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["check", "hub", "--kubeconfig", str(beside_hub), "--addon-kind", "Observability"])
    assert exited.value.code == 2
    assert "--addon-kind: invalid choice: 'Observability'" in capsys.readouterr().err


def test_without_the_own_kinds_crd_its_step_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with APIServer(OCM_CRDS, anonymous=True) as hub:
        kubeconfig = tmp_path / "hub.kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token="admin"), encoding="utf-8")
        out = _check_hub(kubeconfig, capsys, "--addon-kind", "AddonStatus")
    assert (
        "✘ AddonStatus status.addon-status.io/v1alpha1 is not served: the copies' CRD: "
        "kubectl apply -k manifests/hub/crd-own-kind (once, before the rollout)"
    ) in out


def test_the_fixes_name_the_beside_ways_overlays(
    beside_hub: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not ACM's way (manifests/ocm/acm writes what ACM's observability operator owns)."""
    out = _check_hub(beside_hub, capsys, "--addon-kind", "AddonStatus")
    [hub_side] = [line for line in out.splitlines() if "hub side is not installed" in line]
    assert hub_side.endswith("kubectl apply -k manifests/ocm/beside"), hub_side
    assert "manifests/ocm/acm" not in out
    assert "manifests/ocm/acm on ACM" in _check_hub(beside_hub, capsys)  # the other ways
