"""The data the package carries is the project's: the CRDs under controller/demo/crds/ are
byte-identical copies of those in manifests/ and of the OCM CRDs the tests serve (tests/data:
upstream's files, and the ones written to OCM's API's shape) — kustomize reads files only below
its root and setuptools packs files only below a package, so one copy on each side, held equal
here — and pyproject.toml packs every file the code opens at run time."""

from __future__ import annotations

import tomllib
from fnmatch import fnmatch
from pathlib import Path

from controller.demo.command import DEFAULT_SCENARIO
from controller.demo.ocm_hub import OCM_CRDS
from controller.demo.servers import CRD, MCA_CRD

ROOT = Path(__file__).resolve().parents[2]
PACKAGED_CRDS = ROOT / "controller" / "demo" / "crds"
# the packaged copy -> its source in manifests/
SOURCES = {
    "observabilityaddons.yaml": "manifests/base/crd.yaml",
    **{f"{name}.yaml": f"tests/data/upstream/{name}.crd.yaml" for name in (
        "managedclusteraddons", "clustermanagementaddons", "addontemplates",
        "addondeploymentconfigs", "placements")},
    **{f"{name}.yaml": f"tests/data/crds/{name}.cluster.open-cluster-management.io.yaml"
       for name in ("managedclusters", "managedclustersets", "managedclustersetbindings",
                    "placementdecisions")},
    "manifestworks.yaml": "tests/data/crds/manifestworks.work.open-cluster-management.io.yaml",
}  # fmt: skip


def test_the_packaged_crds_are_copies_of_the_manifests() -> None:
    for name, source in SOURCES.items():
        copy, original = PACKAGED_CRDS / name, ROOT / source
        assert copy.read_bytes() == original.read_bytes(), f"cp {source} {copy.relative_to(ROOT)}"


def test_every_packaged_crd_has_its_source() -> None:
    assert sorted(p.name for p in PACKAGED_CRDS.iterdir()) == sorted(SOURCES)


def test_the_files_the_demo_opens_are_package_data() -> None:
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"][
        "setuptools"
    ]["package-data"]["controller"]
    for path in (CRD, MCA_CRD, *OCM_CRDS, DEFAULT_SCENARIO):
        inside = path.relative_to(ROOT / "controller").as_posix()
        assert any(fnmatch(inside, pattern) for pattern in patterns), inside
