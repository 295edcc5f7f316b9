"""No overlay can apply an unset image (issue 35.1): every container of every overlay that deploys
one, wherever it sits in the built objects (an AddOnTemplate's embedded Deployment too), names
the one image `addon-status` at the release's tag, with no template variable in its place; and
a user's kustomization over the overlay with one `images:` entry rewrites every one of them, as
the real kustomize (kubectl's) builds it. So `kustomize edit set image
addon-status=REGISTRY/addon-status:TAG` over manifests/ocm sets the hub side's image and the
agent's in one step, and nothing is left pulling `addon-status:<version>` from nowhere."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.manifests.kustomize import MANIFESTS, build
from tests.manifests.ocm import ADDON, VERSION
from tests.support import KUBECTL

MIRRORED = "registry.example.com/team/addon-status"
IMAGES = {"name": ADDON, "newName": MIRRORED, "newTag": "9.9.9"}
# the overlays a user applies that run the project's image; the discovered list must hold them
EXPECTED = {
    "kubernetes", "acm", "beside", "with-namespace", "hub-controller", "hub-controller-acm",
    "hub-controller-beside", "ocm", "ocm/acm", "ocm/beside",
}  # fmt: skip


def images(node: object) -> Iterator[str]:
    """The image of every container anywhere in `node` (kustomize's reach: lists named
    `containers` or `initContainers`, at any depth)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key in ("containers", "initContainers") and isinstance(value, list):
                yield from (str(c.get("image")) for c in value)
            yield from images(value)
    elif isinstance(node, list):
        for value in node:
            yield from images(value)


def _deploying() -> list[str]:
    overlays = []
    for path in sorted(MANIFESTS.rglob("kustomization.yaml")):
        if yaml.safe_load(path.read_text("utf-8")).get("kind", "Kustomization") != "Kustomization":
            continue  # a component is never applied alone
        if any(True for obj in build(path.parent).objects for _ in images(obj)):
            overlays.append(path.parent.relative_to(MANIFESTS).as_posix())
    return overlays


OVERLAYS = _deploying()


def test_every_overlay_a_user_applies_is_held() -> None:
    assert set(OVERLAYS) >= EXPECTED


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_every_container_names_the_project_image_at_the_release(overlay: str) -> None:
    found = [image for obj in build(MANIFESTS / overlay).objects for image in images(obj)]
    assert found
    assert set(found) == {f"{ADDON}:{VERSION}"}, "one name, one tag, no variable"


def _kustomize(directory: Path) -> list[dict[str, Any]]:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    done = subprocess.run([KUBECTL, "kustomize", str(directory)], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [obj for obj in yaml.safe_load_all(done.stdout) if obj]


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_one_images_entry_over_the_overlay_sets_every_container(
    overlay: str, tmp_path: Path
) -> None:
    """The user's kustomization that the docs show (a relative path: kustomize refuses an
    absolute one), built by kubectl's kustomize and by the tests' own."""
    (tmp_path / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
        "resources": [os.path.relpath(MANIFESTS / overlay, tmp_path)], "images": [IMAGES],
    }), encoding="utf-8")  # fmt: skip
    for objects in (_kustomize(tmp_path), build(tmp_path).objects):
        found = [image for obj in objects for image in images(obj)]
        assert found
        assert set(found) == {f"{MIRRORED}:9.9.9"}
