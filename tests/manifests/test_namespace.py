"""A fresh cluster has no addon namespace, and every namespaced object of the spoke fails
without it (`namespaces "open-cluster-management-addon-observability" not found`, as a real
API server answers). manifests/base leaves the namespace to the addon framework that owns it on
a managed cluster; the optional overlay manifests/with-namespace adds it, so that one
`kubectl apply -k` works on a fresh cluster."""

from __future__ import annotations

import shutil
import subprocess
from typing import Any

import pytest
import yaml

from tests.manifests.kustomize import CLUSTER_SCOPED, MANIFESTS, build, find, identity

Obj = dict[str, Any]
OVERLAY = MANIFESTS / "with-namespace"


def test_the_base_leaves_the_namespace_to_the_addon_framework(spoke: list[Obj]) -> None:
    assert [o for o in spoke if o["kind"] == "Namespace"] == []


def test_the_overlay_adds_the_namespace_every_spoke_object_lives_in(spoke: list[Obj]) -> None:
    overlay = build(OVERLAY).objects
    namespace = find(overlay, "Namespace")["metadata"]["name"]
    assert {o["metadata"]["namespace"] for o in spoke if o["kind"] not in CLUSTER_SCOPED} == {
        namespace
    }
    assert sorted(identity(o) for o in overlay if o["kind"] != "Namespace") == sorted(
        identity(o) for o in spoke
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
