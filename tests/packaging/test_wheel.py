"""The wheel stands alone: built from the distribution's files only (what the Dockerfile copies)
and installed with its declared dependencies into a fresh virtual environment, it runs the
demo (without the `kubernetes` package), `simulate` and `diagrams` from a directory outside the
source tree, answers `--version` from its metadata, and carries the CRDs of manifests/.

The dependencies come from the package index (PyPI here and in CI; pip's cache where it has
one); building, installing and running take about a minute on a 2-core machine."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.test_package_data import SOURCES

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
# The demo's last lines: the reports sent, then where the spoke and the hub ended.
SUMMARY = r"(\d+) reports \((\d+) refused\)(?:.*\n)+?spoke: (.+)\nhub: +(.+)"
DISTRIBUTION_FILES = ("pyproject.toml", "README.md", "statemachines", "controller", "kubesim")
BOOT = """
steps:
  - at: 0s
    report: {reason: UpdateSuccessful, message: deployed}
  - at: 1m
    report: {collector: metrics-collector, reason: ForwardSuccessful}
  - at: 2m
    report: {collector: uwl-metrics-collector, reason: ForwardSuccessful}
    expect: {verdict: accepted, addon: Available}
"""


def _environment() -> dict[str, str]:
    """This environment without the source tree on the path (the tests run with it there)."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@dataclass(frozen=True)
class Installed:
    venv: Path
    workdir: Path  # empty, outside the source tree: where the user runs the commands

    def run(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / argv[0]), *argv[1:]],
            cwd=self.workdir,
            env=_environment() | {"VIRTUAL_ENV": str(self.venv)},
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def _pip(*argv: str, cwd: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--disable-pip-version-check", *argv],
        cwd=cwd,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"pip {' '.join(argv)}:\n{done.stdout}\n{done.stderr}"


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    # Not pytest's tmp_path: it prunes old base directories, also those of a parallel run.
    with tempfile.TemporaryDirectory(prefix="addon-status-wheel-") as name:
        yield _install(Path(name))


def _install(base: Path) -> Installed:
    source, dist, venv, workdir = (base / n for n in ("source", "dist", "venv", "work"))
    source.mkdir()
    workdir.mkdir()
    for name in DISTRIBUTION_FILES:  # a copy: pip builds in place and leaves build/ behind
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, source / name)
    _pip("wheel", "--quiet", "--no-deps", "--wheel-dir", str(dist), str(source), cwd=base)
    wheels = list(dist.glob("*.whl"))
    assert len(wheels) == 1, wheels
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    _pip("--python", str(venv / "bin" / "python"), "install", "--quiet", str(wheels[0]), cwd=base)
    return Installed(venv, workdir)


def test_the_installed_package_runs_its_own_files(installed: Installed) -> None:
    done = installed.run(
        "python", "-c", "import controller, kubesim, statemachines as s; print(s.__file__)"
    )
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()).is_relative_to(installed.venv), done.stdout


def test_the_installed_package_needs_no_kubernetes_package(installed: Installed) -> None:
    """The seam speaks HTTP itself (controller/kube/connection.py): the declared dependencies
    do not bring the `kubernetes` package, and the demo below runs without it."""
    done = installed.run(
        "python", "-c", "import importlib.util as u; print(u.find_spec('kubernetes'))"
    )
    assert (done.returncode, done.stdout.strip()) == (0, "None"), done.stderr


def test_the_installed_demo_plays_the_story_to_the_hub(installed: Installed) -> None:
    done = installed.run("addon-status", "demo", "--time-scale", "400")
    assert done.returncode == 0, done.stderr
    summary = re.search(SUMMARY, done.stdout)
    assert summary, done.stdout
    sent, _, spoke, hub = summary.groups()
    assert int(sent) > 0
    assert spoke.split("  ")[0] == hub.split("  ")[0] != "no status yet"


def test_the_installed_simulate_checks_a_scenario_file(installed: Installed) -> None:
    (installed.workdir / "boot.yaml").write_text(BOOT, encoding="utf-8")
    done = installed.run("addon-status", "simulate", "boot.yaml")
    assert done.returncode == 0, done.stderr
    assert "Available" in done.stdout


def test_the_installed_diagrams_are_the_projects(installed: Installed) -> None:
    done = installed.run("addon-status", "diagrams", "--output", "out")
    assert done.returncode == 0, done.stderr
    written = {p.name: p.read_text() for p in (installed.workdir / "out").iterdir()}
    committed = {p.name: p.read_text() for p in (ROOT / "diagrams").glob("*.mmd")}
    assert written == committed


def test_version_is_the_distribution_version(installed: Installed) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    done = installed.run("addon-status", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"addon-status {project['version']}\n"


def test_the_wheel_carries_the_crds_of_the_manifests(installed: Installed) -> None:
    done = installed.run("python", "-c", "import controller.demo as d; print(d.__path__[0])")
    assert done.returncode == 0, done.stderr
    packaged = Path(done.stdout.strip()) / "crds"
    for name, source in SOURCES.items():
        assert (packaged / name).read_bytes() == (ROOT / source).read_bytes(), name
