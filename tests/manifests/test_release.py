"""One version across a release (issue 35.2): pyproject.toml's version is the source; every
image of the project's that an overlay names (test_image.py: every one, nested ones too), the
images: tags and the Dockerfile's build line carry it; the AddOnTemplates keep one name across
releases (OCM v1.3 rolls a changed template out under the same name, every object's UID kept),
so no release renames them."""

from __future__ import annotations

import re

import yaml

from tests.manifests.kustomize import MANIFESTS, ROOT, build
from tests.manifests.ocm import ADDON, FLAVOURS, VERSION

IMAGE = f"{ADDON}:{VERSION}"


def images(obj: object) -> list[str]:
    if isinstance(obj, dict):
        found = [obj["image"]] if isinstance(obj.get("image"), str) else []
        return found + [i for value in obj.values() for i in images(value)]
    if isinstance(obj, list):
        return [i for value in obj for i in images(value)]
    if isinstance(obj, str) and obj.lstrip().startswith(("apiVersion:", "kind:")):
        return [i for doc in yaml.safe_load_all(obj) for i in images(doc)]
    return []


def test_every_overlay_names_the_projects_image_at_the_release_version() -> None:
    overlays = [p.parent for p in MANIFESTS.rglob("kustomization.yaml")
                if yaml.safe_load(p.read_text("utf-8")).get("kind", "Kustomization")
                == "Kustomization"]  # fmt: skip
    seen = 0
    for overlay in overlays:
        for obj in build(overlay).objects:
            for image in images(obj):
                if image.rsplit(":", 1)[0].endswith(ADDON):
                    assert image == IMAGE, (overlay, obj["kind"], image)
                    seen += 1
    assert seen


def test_the_images_tags_and_the_dockerfile_carry_the_release_version() -> None:
    for path in MANIFESTS.rglob("kustomization.yaml"):
        for entry in yaml.safe_load(path.read_text("utf-8")).get("images") or ():
            if entry.get("name") == ADDON and "newTag" in entry:
                assert str(entry["newTag"]) == VERSION, path
    dockerfile = (ROOT / "Dockerfile").read_text("utf-8")
    assert re.findall(r"docker build -t (\S+)", dockerfile) == [IMAGE]


def test_the_templates_keep_one_name_across_releases() -> None:
    for _, name, _ in FLAVOURS.values():
        assert VERSION not in name
