"""The addon CR's CRD as the project's own kind (manifests/components/own-kind), for tests of the
way beside ACM's observability operator (docs/spec.md §12.1)."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
COPY_CRD = ROOT / "manifests" / "base" / "crd.yaml"
COMPONENT = ROOT / "manifests" / "components" / "own-kind"


def own_kind_crd(into: Path) -> Path:
    """The seed CRD as the own-kind component patches it (its JSON patch, applied here)."""
    crd = yaml.safe_load(COPY_CRD.read_text())
    component = yaml.safe_load((COMPONENT / "kustomization.yaml").read_text())
    for op in yaml.safe_load(component["patches"][0]["patch"]):
        assert op["op"] == "replace"
        *parents, last = [int(p) if p.isdigit() else p for p in op["path"].strip("/").split("/")]
        target = crd
        for part in parents:
            target = target[part]
        target[last] = op["value"]
    path = into / "own-crd.yaml"
    path.write_text(yaml.safe_dump(crd))
    return path
