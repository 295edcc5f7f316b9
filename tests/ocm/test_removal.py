"""Removing the rollout keeps every addon CR (docs/operations.md, "Removing the rollout"): when
the addon leaves a cluster, OCM v1.3's ManifestWork deletes every object it applied except those
annotated `addon.open-cluster-management.io/deletion-orphan` (addon-framework's agentdeploy; a
template's `deleteOption` is not read). Played here on a spoke API server: the seed template
rendered and applied as the work agent applies it, an addon CR beside it, then the removal as
the work agent runs it; and the beside template, which carries its addon CR."""

from __future__ import annotations

import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.demo.addon_manager import render
from controller.kube.api import ApiResource, NotFoundError
from kubesim import APIServer, UserInfo
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.manifests.ocm import DELETION_ORPHAN
from tests.support import apply_objects, kube_of

pytestmark = pytest.mark.integration
Obj = dict[str, Any]
ADDON = ApiResource("observability.open-cluster-management.io", "v1beta1", "observabilityaddons",
                    "ObservabilityAddon")  # fmt: skip


def _spoke(tmp_path: Path) -> tuple[APIServer, list[Obj]]:
    rollout = build(MANIFESTS / "ocm").objects
    template, config = find(rollout, "AddOnTemplate"), find(rollout, "AddOnDeploymentConfig")
    agent = render(template, "cluster1", config).agent
    crd = find(agent, "CustomResourceDefinition")
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd), "utf-8")
    tokens = {"admin": UserInfo("admin", groups=("system:masters",))}
    server = APIServer([path], tokens=tokens).start()
    applied = [o for o in agent if o["kind"] != "CustomResourceDefinition"]
    namespace = config["spec"]["agentInstallNamespace"]
    addon_cr = {"apiVersion": f"{ADDON.group}/{ADDON.version}", "kind": ADDON.kind, "spec": {},
                "metadata": {"name": "observability-addon", "namespace": namespace}}  # fmt: skip
    apply_objects(kube_of(server, "admin"), [*applied, addon_cr])
    return server, agent


def _remove(server: APIServer, agent: list[Obj], *, orphan: bool = True) -> list[str]:
    """What the work agent deletes when the addon goes; the kinds it kept."""
    kube = kube_of(server, "admin")
    kept = []
    for obj in reversed(agent):
        if orphan and DELETION_ORPHAN in (obj["metadata"].get("annotations") or {}):
            kept.append(obj["kind"])
            continue
        assert obj["kind"] != "CustomResourceDefinition", "the CRD would go, and every CR"
        resource = kube.discover(obj["apiVersion"], obj["kind"])
        path = f"{resource.path(obj['metadata'].get('namespace', ''))}/{obj['metadata']['name']}"
        request = urllib.request.Request(server.url + path, method="DELETE",
                                         headers={"Authorization": "Bearer admin"})  # fmt: skip
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
    return kept


def test_removing_the_addon_keeps_the_namespace_the_crd_and_every_addon_cr(tmp_path: Path) -> None:
    server, agent = _spoke(tmp_path)
    try:
        assert sorted(_remove(server, agent)) == ["CustomResourceDefinition", "Namespace"]
        namespace = find(agent, "Namespace")["metadata"]["name"]
        assert kube_of(server, "admin").get(ADDON, namespace, "observability-addon")
        assert server.get_object("apps", "v1", "deployments", namespace,
                                 "addon-status-controller") is None  # fmt: skip
    finally:
        server.stop()


def test_without_the_annotation_the_namespace_would_take_the_addon_cr_with_it(
    tmp_path: Path,
) -> None:
    """The annotation is what keeps the data: the same removal without it loses the CR."""
    server, agent = _spoke(tmp_path)
    try:
        namespace = find(agent, "Namespace")
        _remove(server, [namespace], orphan=False)
        with pytest.raises(NotFoundError):
            kube_of(server, "admin").get(
                ADDON, namespace["metadata"]["name"], "observability-addon"
            )
    finally:
        server.stop()


def test_removing_the_beside_addon_keeps_the_addon_status_it_carried(tmp_path: Path) -> None:
    """Beside ACM's observability operator the template carries the spoke's `AddonStatus` itself
    (nobody else makes the project's kind): removal keeps it, its status and its CRD, in the
    namespace MCO's addon made (the template carries none)."""
    rollout = build(MANIFESTS / "ocm" / "beside").objects
    template, config = find(rollout, "AddOnTemplate"), find(rollout, "AddOnDeploymentConfig")
    agent = render(template, "cluster1", config).agent
    crd = find(agent, "CustomResourceDefinition")
    path = tmp_path / "crd.yaml"
    path.write_text(yaml.safe_dump(crd), "utf-8")
    tokens = {"admin": UserInfo("admin", groups=("system:masters",))}
    with APIServer([path], tokens=tokens) as server:
        admin = kube_of(server, "admin")
        namespace = config["spec"]["agentInstallNamespace"]
        apply_objects(admin, [{"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": namespace}},
                              *(o for o in agent if o is not crd)])  # fmt: skip
        addon = find(agent, "AddonStatus")
        kind = admin.discover(addon["apiVersion"], addon["kind"])
        condition = {"type": "Available", "status": "True", "reason": "Up", "message": "",
                     "lastTransitionTime": "2026-11-27T00:00:00Z"}  # fmt: skip
        admin.patch_status(kind, namespace, "addon-status", {"status": {"conditions": [condition]}})
        assert sorted(_remove(server, agent)) == ["AddonStatus", "CustomResourceDefinition"]
        kept = admin.get(kind, namespace, "addon-status")
        assert kept["status"]["conditions"] == [condition]
        assert server.get_object("apps", "v1", "deployments", namespace,
                                 "addon-status-controller") is None  # fmt: skip
