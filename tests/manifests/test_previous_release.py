"""The previous release's manifests, pinned in tests/data/releases/0.1.0 for the upgrade test
(tests/ocm/test_upgrade.py): byte-identical to the repository's history at 0.1.0's commit, and
exactly the files its overlays read, each of which still builds."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from tests.manifests.kustomize import build
from tests.ocm.releases import PREVIOUS, RELEASE, git_show, missing_history

PINNED: Final = PREVIOUS.parent
OVERLAYS: Final = ("ocm", "ocm/acm", "kubernetes", "acm", "hub-controller", "hub/crd")


def _pinned_files() -> list[Path]:
    return sorted(p for p in (PINNED / "manifests").rglob("*") if p.is_file())


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_pinned_overlay_builds(overlay: str) -> None:
    assert build(PINNED / "manifests" / overlay).objects


def test_the_pinned_files_are_exactly_what_the_overlays_read() -> None:
    read: set[Path] = set()
    for overlay in OVERLAYS:
        read |= build(PINNED / "manifests" / overlay).files
    assert sorted(read) == _pinned_files()


def test_the_pinned_files_are_the_release_byte_for_byte() -> None:
    missing = missing_history()
    if missing is not None:
        pytest.skip(f"cannot compare with git show {RELEASE}: {missing}")
    assert 'version = "0.1.0"' in git_show("pyproject.toml").decode().splitlines()
    for path in _pinned_files():
        name = path.relative_to(PINNED).as_posix()
        assert path.read_bytes() == git_show(name), name
