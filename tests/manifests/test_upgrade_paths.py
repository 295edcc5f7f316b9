"""Upgrading from 0.1.0 off the OCM path (docs/operations.md, "Upgrading"): a spoke applied by
hand (`manifests/kubernetes`, `manifests/acm`) and the hub side alone (`manifests/hub-controller`,
`-acm`), each by `kubectl apply -k` of 0.1.0's overlay (pinned in tests/data/releases/0.1.0) and
then of the current one, with the real kubectl against kubesim. Every object 0.1.0 applied is
the same object afterwards (its UID), the addon CR or hub copy keeps its status, and the
Deployment runs the current image and flags. The OCM path: tests/ocm/test_upgrade.py."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from controller.demo.ocm_hub import OCM_CRDS
from kubesim.server import APIServer
from tests.manifests.kustomize import MANIFESTS, ROOT, build, find, identity
from tests.support import KUBECTL

pytestmark = pytest.mark.integration
PREVIOUS: Final = ROOT / "tests" / "data" / "releases" / "0.1.0" / "manifests"
GROUP: Final = "observability.open-cluster-management.io"
STATUS: Final = {"conditions": [{
    "type": "Available", "status": "True", "reason": "Kept", "message": "",
    "lastTransitionTime": "2026-11-26T00:00:00Z"}]}  # fmt: skip
Obj = dict[str, Any]


def _kubectl(url: str, *args: str) -> list[str]:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    done = subprocess.run([KUBECTL, "--server", url, *args], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _crd_file(directory: Path) -> Path:
    (crd,) = build(MANIFESTS / "hub" / "crd").objects
    path = directory / "crd.yaml"
    path.write_text(yaml.safe_dump(crd), "utf-8")
    return path


def _with_status(server: APIServer, plural: str, obj: Obj) -> Obj:
    """`obj` created with a status, as its writer left it."""
    group, _, version = obj["apiVersion"].rpartition("/")
    return server.put_object(group, version, plural, {**obj, "status": STATUS})


def _upgrade(server: APIServer, old: str, new: str) -> list[str]:
    _kubectl(server.url, "apply", "-k", str(PREVIOUS / old))
    before = {identity(o): o for o in build(PREVIOUS / old).objects}
    uids = {key: _uid(server, obj) for key, obj in before.items()}
    applied = _kubectl(server.url, "apply", "-k", str(MANIFESTS / new))
    assert {key: _uid(server, obj) for key, obj in before.items()} == uids
    current = build(MANIFESTS / new).objects
    [wanted] = find(current, "Deployment")["spec"]["template"]["spec"]["containers"]
    deployment = find(before.values(), "Deployment")["metadata"]
    stored = server.get_object("apps", "v1", "deployments", deployment["namespace"],
                               deployment["name"]) or {}  # fmt: skip
    [container] = stored["spec"]["template"]["spec"]["containers"]
    assert (container["image"], container["args"]) == (wanted["image"], wanted["args"])
    return applied


def _uid(server: APIServer, obj: Obj) -> str:
    out = _kubectl(server.url, "get", obj["kind"].lower(), obj["metadata"]["name"],
                   *(["-n", obj["metadata"]["namespace"]] if obj["metadata"].get("namespace")
                     else []), "-o", "jsonpath={.metadata.uid}")  # fmt: skip
    return "".join(out)


@pytest.mark.parametrize("overlay", ["kubernetes", "acm"])
def test_a_spoke_applied_by_hand_upgrades_in_place(overlay: str, tmp_path: Path) -> None:
    namespace = "open-cluster-management-addon-observability"
    with APIServer([_crd_file(tmp_path)], anonymous=True,
                   namespaces=["default", "kube-system", namespace]) as server:  # fmt: skip
        cr = _with_status(server, "observabilityaddons", {
            "apiVersion": f"{GROUP}/v1beta1", "kind": "ObservabilityAddon", "spec": {},
            "metadata": {"name": "observability-addon", "namespace": namespace}})  # fmt: skip
        applied = _upgrade(server, overlay, overlay)
        kept = server.get_object(GROUP, "v1beta1", "observabilityaddons", namespace,
                                 "observability-addon") or {}  # fmt: skip
        assert (kept["metadata"]["uid"], kept["status"]) == (cr["metadata"]["uid"], STATUS)
        assert "deployment.apps/addon-status-controller configured" in applied


@pytest.mark.parametrize(
    ("overlay", "addon"),
    [("hub-controller", "addon-status"), ("hub-controller-acm", "observability-controller")],
)
def test_the_hub_side_upgrades_in_place_and_names_its_managed_cluster_addon(
    overlay: str, addon: str, tmp_path: Path
) -> None:
    """0.1.0's `manifests/hub-controller` wrote `observability-controller`; the current one
    writes OCM's `addon-status`, and `manifests/hub-controller-acm` ACM's
    `observability-controller`: an ACM hub upgrades to the second."""
    namespaces = ["default", "kube-system", "cluster1", "open-cluster-management-observability"]
    with APIServer([_crd_file(tmp_path), *OCM_CRDS], anonymous=True,
                   namespaces=namespaces) as server:  # fmt: skip
        copy = _with_status(server, "observabilityaddons", {
            "apiVersion": f"{GROUP}/v1beta1", "kind": "ObservabilityAddon", "spec": {},
            "metadata": {"name": "observability-addon", "namespace": "cluster1"}})  # fmt: skip
        _upgrade(server, "hub-controller", overlay)
        kept = server.get_object(GROUP, "v1beta1", "observabilityaddons", "cluster1",
                                 "observability-addon") or {}  # fmt: skip
        assert (kept["metadata"]["uid"], kept["status"]) == (copy["metadata"]["uid"], STATUS)
        role = server.get_object("rbac.authorization.k8s.io", "v1", "clusterroles", "",
                                 "addon-status-hub-controller") or {}  # fmt: skip
        named = {n for r in role["rules"] for n in r.get("resourceNames") or []}
        assert addon in named
