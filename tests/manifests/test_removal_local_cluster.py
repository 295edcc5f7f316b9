"""Removing the OCM rollout from a hub that manages itself keeps every addon CR (issue 34.2,
docs/operations.md "Removing the rollout"): on ACM's `local-cluster` the hub copies' CRD is also
that cluster's spoke CRD, so `kubectl delete -k` of a rollout that listed it would delete the
CRD and, with it, local-cluster's addon CR and every hub copy. The CRD is a step of its own
(manifests/hub/crd, applied once, kept by GitOps prunes); the rollouts never list it. Played with
the real kubectl against kubesim holding local-cluster's addon CR and two hub copies."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from controller.demo.ocm_hub import OCM_CRDS
from kubesim.server import APIServer
from tests.manifests.kustomize import MANIFESTS, build
from tests.support import KUBECTL

pytestmark = pytest.mark.integration
ADDON_NAMESPACE = "open-cluster-management-addon-observability"
ROLLOUTS = ("ocm", "ocm/acm", "hub-controller-beside")  # what a hub removes with delete -k


def kubectl(url: str, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    return subprocess.run([KUBECTL, "--server", url, *args], capture_output=True, text=True,
                          input=stdin, timeout=120, check=False)  # fmt: skip


@pytest.mark.parametrize("rollout", ROLLOUTS)
def test_no_hub_rollout_lists_a_crd_that_holds_addon_crs(rollout: str) -> None:
    kinds = {o["kind"] for o in build(MANIFESTS / rollout).objects}
    assert "CustomResourceDefinition" not in kinds


@pytest.mark.parametrize("step", ["hub/crd", "hub/crd-own-kind"])
def test_the_crd_step_is_kept_by_gitops_prunes(step: str) -> None:
    (crd,) = build(MANIFESTS / step).objects
    assert crd["metadata"]["annotations"] == {
        "argocd.argoproj.io/sync-options": "Delete=false",
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
    }


def test_removing_the_rollout_from_a_self_managed_hub_keeps_every_addon_cr(
    tmp_path: Path,
) -> None:
    (crd,) = build(MANIFESTS / "hub" / "crd").objects
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd), "utf-8")
    namespaces = ["default", "kube-system", "local-cluster", "cluster1", ADDON_NAMESPACE]
    with APIServer([path, *OCM_CRDS], anonymous=True, namespaces=namespaces) as server:
        addon_crs = [(ADDON_NAMESPACE, "observability-addon"),  # local-cluster's spoke CR
                     ("local-cluster", "observability-addon"),  # the hub copies
                     ("cluster1", "observability-addon")]  # fmt: skip
        for namespace, name in addon_crs:
            cr = {"apiVersion": "observability.open-cluster-management.io/v1beta1",
                  "kind": "ObservabilityAddon", "spec": {},
                  "metadata": {"name": name, "namespace": namespace}}  # fmt: skip
            created = kubectl(server.url, "create", "-f", "-", stdin=yaml.safe_dump(cr))
            assert created.returncode == 0, created.stderr
        applied = kubectl(server.url, "apply", "-k", str(MANIFESTS / "ocm"))
        assert applied.returncode == 0, applied.stderr
        # kubesim empties a deleted namespace at once (kube-apiserver's namespace controller
        # takes a while), so the rollout's namespaced objects may be gone before their turn
        removed = kubectl(server.url, "delete", "--ignore-not-found", "-k", str(MANIFESTS / "ocm"))
        assert removed.returncode == 0, removed.stderr
        assert "clustermanagementaddon.addon.open-cluster-management.io" in removed.stdout
        assert "customresourcedefinition" not in removed.stdout
        for namespace, name in addon_crs:
            kept = kubectl(server.url, "get", "observabilityaddons", "-n", namespace, name)
            assert kept.returncode == 0, kept.stderr
