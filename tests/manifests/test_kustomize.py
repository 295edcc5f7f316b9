"""manifests/ as files and as kustomizations: every YAML file parses into Kubernetes objects;
every kustomization builds, and together they list every manifest file (none is forgotten by
`kubectl apply -k`); every namespaced object names its namespace in its own file; the hub
overlay takes the CRD and nothing of the spoke's controller; and where kubectl is installed,
`kubectl kustomize` builds exactly what the project's small kustomize reads."""

from __future__ import annotations

import copy
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests.kustomize import (
    CLUSTER_SCOPED,
    MANIFESTS,
    KustomizeError,
    build,
    documents,
    find,
    identity,
    kustomization_roots,
)
from tests.support import KUBECTL

Obj = dict[str, Any]
FILES = sorted(MANIFESTS.rglob("*.yaml"))
ROOTS = kustomization_roots()
SPOKE_LABEL = ("app.kubernetes.io/name", "addon-status-controller")


def _rel(path: Path) -> str:
    return str(path.relative_to(MANIFESTS))


@pytest.mark.parametrize("path", FILES, ids=_rel)
def test_every_yaml_file_parses_into_named_objects(path: Path) -> None:
    docs = documents(path)
    assert docs, f"{_rel(path)} holds no document"
    for doc in docs:
        assert isinstance(doc, dict) and doc.get("apiVersion") and doc.get("kind"), doc
        if path.name != "kustomization.yaml":
            assert doc["metadata"]["name"], f"{_rel(path)}: an object without a name"


def test_every_manifest_file_is_listed_by_a_kustomization() -> None:
    listed: set[Path] = set()
    for root in ROOTS:
        listed |= build(root).files
    assert sorted(_rel(p) for p in set(FILES) - listed) == []
    assert sorted(_rel(p) for p in listed - set(FILES)) == []


@pytest.mark.parametrize("path", [p for p in FILES if p.name != "kustomization.yaml"], ids=_rel)
def test_every_namespaced_object_names_its_namespace_in_its_file(path: Path) -> None:
    """So `kubectl apply -f FILE` lands where `-k` would, and no namespace is left to chance."""
    for doc in documents(path):
        if doc["kind"] not in CLUSTER_SCOPED:
            assert doc["metadata"].get("namespace"), f"{doc['kind']} {doc['metadata']['name']}"


def test_names_are_unique_in_every_build() -> None:
    for root in ROOTS:
        ids = [identity(o) for o in build(root).objects]
        assert len(ids) == len(set(ids)), _rel(root)


def test_the_hub_gets_the_spoke_crd_and_nothing_of_the_spoke_controller(
    spoke: list[Obj], hub: list[Obj]
) -> None:
    crd = find(spoke, "CustomResourceDefinition")
    hub_crd = copy.deepcopy(find(hub, "CustomResourceDefinition"))
    # the hub's copy is kept by a GitOps prune (issue 34.2); otherwise the spoke's CRD
    assert hub_crd["metadata"].pop("annotations") == {
        "argocd.argoproj.io/sync-options": "Delete=false",
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
    }
    assert hub_crd == crd
    assert SPOKE_LABEL[0] not in (crd["metadata"].get("labels") or {})
    for obj in spoke:  # what the hub's delete patch removes: everything but the CRD
        if obj is not crd:
            labels = obj["metadata"].get("labels") or {}
            assert labels.get(SPOKE_LABEL[0]) == SPOKE_LABEL[1], identity(obj)
    assert sorted(o["kind"] for o in hub) == [
        "ClusterRole",
        "ClusterRole",
        "CustomResourceDefinition",
        "RoleBinding",
        "ServiceAccount",
    ]


@pytest.mark.parametrize("root", ROOTS, ids=_rel)
def test_kubectl_kustomize_builds_what_the_small_kustomize_reads(root: Path) -> None:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    done = subprocess.run(
        [KUBECTL, "kustomize", str(root)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    real = {identity(o): o for o in yaml.safe_load_all(done.stdout) if o}
    ours = {identity(o): o for o in build(root).objects}
    assert sorted(ours) == sorted(real)
    for key, obj in ours.items():
        assert obj == real[key], key


@pytest.mark.parametrize(
    ("kustomization", "files", "problem"),
    [
        pytest.param(
            {"configMapGenerator": [{"name": "x"}]}, {}, "not supported", id="unknown-field"
        ),
        pytest.param({"resources": ["missing.yaml"]}, {}, "does not exist", id="missing-file"),
        pytest.param(
            {"resources": ["../outside.yaml"]},
            {"../outside.yaml": "kind: X"},
            "not in or below",
            id="file-outside-root",
        ),
        pytest.param(
            {"resources": ["a.yaml"], "patches": [{"path": "p.yaml"}]},
            {"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}"},
            "only delete patches",
            id="patch-file",
        ),
        pytest.param(
            {
                "resources": ["a.yaml"],
                "patches": [
                    {
                        "target": {"kind": "ConfigMap", "name": "a"},
                        "patch": "- {op: move, from: /data, path: /other}",
                    }
                ],
            },
            {"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}"},
            "only JSON patches of `add`, `replace`, `remove`",
            id="json-patch-move",
        ),
        pytest.param(
            {"components": ["c"]},
            {"c/kustomization.yaml": "kind: Kustomization"},
            "is not a kind: Component",
            id="component-not-a-component",
        ),
    ],
)
def test_the_small_kustomize_refuses_what_it_cannot_read(
    tmp_path: Path, kustomization: Obj, files: dict[str, str], problem: str
) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "kustomization.yaml").write_text(yaml.safe_dump(kustomization), encoding="utf-8")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    with pytest.raises(KustomizeError, match=problem):
        build(root)
