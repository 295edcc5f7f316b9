"""Every overlay the documentation offers applies on a fresh cluster: built, then applied object
by object to an API server that serves only what a fresh Kubernetes serves (kubesim's built-in
kinds, the CRDs in the same apply) plus the prerequisites the documentation names before the
command (a namespace it creates first, Open Cluster Management's CRDs on a hub). On a real
kube-apiserver 1.36 `kubectl apply -k manifests/with-namespace` once failed on `no matches for
kind "ServiceMonitor"`, and the hub overlays on namespaces nobody had created; each of those is
a failure here (`KindNotServedError`, `namespaces "..." not found`)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from controller.kube.api import NotFoundError
from controller.spoke.addon import GROUP, VERSION
from kubesim import DEFAULT_NAMESPACES, APIServer
from tests.manifests.kustomize import MANIFESTS, ROOT, build
from tests.support import KUBECTL, apply_objects, kube_of

Obj = dict[str, Any]
ADDON_NAMESPACE: Final = "open-cluster-management-addon-observability"
UPSTREAM: Final = ROOT / "tests" / "data" / "upstream"
OCM: Final = (
    *(UPSTREAM / f"{n}.crd.yaml" for n in ("clustermanagementaddons", "addontemplates",
      "addondeploymentconfigs", "placements", "managedclusteraddons")),
    ROOT / "tests/data/crds/managedclustersetbindings.cluster.open-cluster-management.io.yaml",
)  # fmt: skip
DOCUMENTS: Final = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# overlay -> (namespaces the documentation creates first, CRDs the cluster already serves)
PREREQUISITES: Final[dict[str, tuple[tuple[str, ...], tuple[Path, ...]]]] = {
    "base": ((ADDON_NAMESPACE,), ()),
    "kubernetes": ((ADDON_NAMESPACE,), ()),
    "with-namespace": ((), ()),
    "acm": ((ADDON_NAMESPACE,), (UPSTREAM / "observabilityaddons.crd.yaml",)),
    "hub": (("cluster1",), ()),
    "hub/create-missing": (("cluster1",), ()),
    "hub/crd": ((), ()),
    "hub/crd-own-kind": ((), ()),
    "hub-controller": (("open-cluster-management-observability",), ()),
    "hub-controller-acm": (("open-cluster-management-observability",), ()),
    "beside": ((ADDON_NAMESPACE,), ()),
    "hub-controller-beside": (("open-cluster-management-observability",), ()),
    "ocm": ((), OCM),
    "ocm/acm": ((), OCM),
    "ocm/beside": ((), OCM),
}
# an overlay the documentation has the reader write (a Kustomization block that names its file)
# over one of the above, with their image: not in the repository
WRITTEN: Final = re.compile(r"^# manifests/([\w/-]+)/kustomization\.yaml", re.M)


def _offered() -> set[str]:
    """Every directory the documentation applies with `apply -k manifests/...`."""
    found, written = set(), set()
    for document in DOCUMENTS:
        text = document.read_text("utf-8")
        found |= set(re.findall(r"apply -k manifests/([\w/-]+)", text))
        written |= set(WRITTEN.findall(text))
    return found - written


def test_every_overlay_the_documentation_offers_has_its_prerequisites_listed() -> None:
    assert _offered() - set(PREREQUISITES) == set()


@pytest.mark.parametrize("overlay", sorted(PREREQUISITES))
def test_a_namespace_the_overlay_needs_is_created_first_in_the_documentation(overlay: str) -> None:
    text = "\n".join(d.read_text("utf-8") for d in DOCUMENTS)
    for namespace in PREREQUISITES[overlay][0]:
        assert re.search(rf"create namespace {re.escape(namespace)}\b", text), namespace


@pytest.mark.integration
@pytest.mark.parametrize("overlay", sorted(PREREQUISITES))
def test_the_overlay_applies_on_a_fresh_cluster(overlay: str, tmp_path: Path) -> None:
    namespaces, crds = PREREQUISITES[overlay]
    objects = build(MANIFESTS / overlay).objects
    served = list(crds)
    for crd in (o for o in objects if o["kind"] == "CustomResourceDefinition"):
        served.append(tmp_path / f"{crd['metadata']['name']}.yaml")
        served[-1].write_text(yaml.safe_dump(crd), encoding="utf-8")
    rest = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    rest.sort(key=lambda o: o["kind"] != "Namespace")  # kubectl applies namespaces first
    with APIServer(served, namespaces=[*DEFAULT_NAMESPACES, *namespaces]) as cluster:
        apply_objects(kube_of(cluster), rest)


def _documented_removal() -> list[str]:
    """The commands of getting-started.md's "By hand, keeping the addon CRs", as a shell
    reads them (continuation lines joined, `$NS` set, comments left out)."""
    text = (ROOT / "docs" / "getting-started.md").read_text("utf-8")
    block = text.split("**By hand, keeping the addon CRs**")[1].split("```sh\n")[1].split("```")[0]
    joined = block.replace("\\\n", " ")
    namespace = re.search(r"^NS=(\S+)$", joined, flags=re.MULTILINE)
    assert namespace is not None
    return [
        line.replace("$NS", namespace.group(1))
        for line in joined.splitlines()
        if line.startswith("kubectl ")
    ]


@pytest.mark.integration
def test_the_documented_removal_by_hand_keeps_the_addon_cr_and_nothing_else(
    tmp_path: Path,
) -> None:
    """The real kubectl runs getting-started.md's commands against kubesim after
    manifests/kubernetes was applied and an addon CR created: every object of the overlay but
    the CRD is gone, and the addon CR is still there."""
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    objects = build(MANIFESTS / "kubernetes").objects
    (crd,) = (o for o in objects if o["kind"] == "CustomResourceDefinition")
    crd_file = tmp_path / "crd.yaml"
    crd_file.write_text(yaml.safe_dump(crd), encoding="utf-8")
    rest = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    with APIServer([crd_file], namespaces=[*DEFAULT_NAMESPACES, ADDON_NAMESPACE],
                   anonymous=True) as cluster:  # fmt: skip
        kube = kube_of(cluster)
        apply_objects(kube, rest)
        metadata = {"name": "observability-addon", "namespace": ADDON_NAMESPACE}
        addon = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ObservabilityAddon",
                 "metadata": metadata}  # fmt: skip
        apply_objects(kube, [addon])
        for command in _documented_removal():
            done = subprocess.run(
                [KUBECTL, "--server", cluster.url, *shlex.split(command)[1:]],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            assert done.returncode == 0, f"{command}: {done.stderr}"
        for obj in rest:
            resource = kube.discover(obj["apiVersion"], obj["kind"])
            namespace = obj["metadata"].get("namespace", "")
            with pytest.raises(NotFoundError):
                kube.get(resource, namespace, obj["metadata"]["name"])
        kept = kube.get(kube.discover(addon["apiVersion"], "ObservabilityAddon"),
                        ADDON_NAMESPACE, "observability-addon")  # fmt: skip
        assert kept["metadata"]["name"] == "observability-addon"
