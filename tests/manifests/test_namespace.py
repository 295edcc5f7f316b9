"""A fresh cluster has no addon namespace, and every namespaced object of the spoke fails
without it (`namespaces "open-cluster-management-addon-observability" not found`, as a real
API server answers and kubesim mirrors). manifests/base and manifests/kubernetes leave the
namespace to the addon framework that owns it on a managed cluster; the component
manifests/components/namespace adds it, and the optional overlay manifests/with-namespace is
manifests/kubernetes with it, so that one `kubectl apply -k` works on a fresh cluster."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.manifests.kustomize import CLUSTER_SCOPED, MANIFESTS, build, find, identity

Obj = dict[str, Any]
OVERLAY = MANIFESTS / "with-namespace"


@pytest.mark.parametrize("root", ["base", "kubernetes"])
def test_the_spoke_builds_leave_the_namespace_to_the_addon_framework(root: str) -> None:
    assert [o for o in build(MANIFESTS / root).objects if o["kind"] == "Namespace"] == []


def test_the_overlay_adds_the_namespace_every_spoke_object_lives_in() -> None:
    overlay, kubernetes = build(OVERLAY).objects, build(MANIFESTS / "kubernetes").objects
    namespace = find(overlay, "Namespace")["metadata"]["name"]
    namespaced = {o["metadata"]["namespace"] for o in kubernetes if o["kind"] not in CLUSTER_SCOPED}
    assert namespaced == {namespace}
    assert [o for o in overlay if o["kind"] != "Namespace"] == kubernetes
    assert sorted(identity(o) for o in overlay) == sorted(
        [identity(find(overlay, "Namespace")), *(identity(o) for o in kubernetes)]
    )


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (with kustomize) not found")
def test_kubectl_kustomize_applies_the_namespace_first() -> None:
    done = subprocess.run(
        ["kubectl", "kustomize", str(OVERLAY)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    kinds = [o["kind"] for o in yaml.safe_load_all(done.stdout) if o]
    assert kinds[0] == "Namespace" and kinds.count("Namespace") == 1
