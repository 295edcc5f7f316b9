"""The previous release's manifests, pinned in tests/data/releases/0.1.0 for the upgrade test
(tests/ocm/test_upgrade.py): byte-identical to the repository's history at 0.1.0's commit, and
exactly the files its overlays read, each of which still builds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

from tests.manifests.kustomize import ROOT, build

RELEASE: Final = "860eae7"  # 0.1.0, dated 2026-11-26 in the CHANGELOG
PINNED: Final = ROOT / "tests" / "data" / "releases" / "0.1.0"
OVERLAYS: Final = ("ocm", "ocm/acm", "kubernetes", "acm", "hub-controller", "hub/crd")


def _pinned_files() -> list[Path]:
    return sorted(p for p in (PINNED / "manifests").rglob("*") if p.is_file())


def _history() -> str | None:
    """Why the history cannot be read here, or None when it can."""
    git = shutil.which("git")
    if git is None:
        return "no git on this machine"
    found = subprocess.run([git, "-C", str(ROOT), "cat-file", "-e", f"{RELEASE}^{{commit}}"],
                           capture_output=True, check=False, timeout=60)  # fmt: skip
    if found.returncode != 0:
        return f"commit {RELEASE} (0.1.0) is not in this checkout's history (a source tarball?)"
    return None


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_pinned_overlay_builds(overlay: str) -> None:
    assert build(PINNED / "manifests" / overlay).objects


def test_the_pinned_files_are_exactly_what_the_overlays_read() -> None:
    read: set[Path] = set()
    for overlay in OVERLAYS:
        read |= build(PINNED / "manifests" / overlay).files
    assert sorted(read) == _pinned_files()


def test_the_pinned_files_are_the_release_byte_for_byte() -> None:
    missing = _history()
    if missing is not None:
        pytest.skip(f"cannot compare with git show {RELEASE}: {missing}")
    git = shutil.which("git")
    assert git is not None
    project = subprocess.run([git, "-C", str(ROOT), "show", f"{RELEASE}:pyproject.toml"],
                             capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    assert 'version = "0.1.0"' in project.stdout.splitlines()
    for path in _pinned_files():
        name = path.relative_to(PINNED).as_posix()
        shown = subprocess.run([git, "-C", str(ROOT), "show", f"{RELEASE}:{name}"],
                               capture_output=True, check=True, timeout=60)  # fmt: skip
        assert path.read_bytes() == shown.stdout, name
