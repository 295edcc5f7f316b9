"""Prometheus' own tools for the tests: `promtool` (check and unit-test rules, as the
ecosystem's mixins are tested) and the `prometheus` server (scrape the processes, evaluate the
rules). Taken from the system when it has them (Debian's package `prometheus`), else from that
package unpacked once into `.cache/prometheus` of this checkout: `apt-get download` needs no
root, and the binaries need nothing but libc, so a fresh machine (and `.ci/run`) gets them
without installing anything system-wide.

    .venv/bin/python -m tests.monitoring.prometheus   # fetch them now; prints where they are
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["Tools", "tools"]

ROOT: Final = Path(__file__).resolve().parents[2]
CACHE: Final = ROOT / ".cache" / "prometheus"
PACKAGE: Final = "prometheus"


@dataclass(frozen=True)
class Tools:
    promtool: Path
    prometheus: Path


def tools() -> Tools:
    """The two binaries; fetched into the cache when the system has neither. Raises
    RuntimeError saying what failed (no package lists, no network) when it cannot."""
    system = shutil.which("promtool"), shutil.which("prometheus")
    if system[0] and system[1]:
        return Tools(Path(system[0]), Path(system[1]))
    cached = Tools(CACHE / "usr" / "bin" / "promtool", CACHE / "usr" / "bin" / "prometheus")
    if not (cached.promtool.is_file() and cached.prometheus.is_file()):
        _unpack_package()
    return cached


def _unpack_package() -> None:
    with tempfile.TemporaryDirectory(prefix="prometheus-deb-") as scratch:
        download = ["apt-get", "download", PACKAGE]
        done = subprocess.run(download, cwd=scratch, capture_output=True, text=True, check=False)
        if done.returncode != 0 and os.geteuid() == 0:  # no package lists yet: fetch them
            subprocess.run(["apt-get", "update"], capture_output=True, check=False)
            done = subprocess.run(
                download, cwd=scratch, capture_output=True, text=True, check=False
            )
        packages = sorted(Path(scratch).glob(f"{PACKAGE}_*.deb"))
        if done.returncode != 0 or not packages:
            raise RuntimeError(f"cannot fetch Debian's {PACKAGE} package: {done.stderr.strip()}")
        staging = CACHE.with_name("prometheus.partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        subprocess.run(["dpkg-deb", "-x", str(packages[-1]), str(staging)], check=True)
        shutil.rmtree(CACHE, ignore_errors=True)
        staging.rename(CACHE)  # whole or not at all: a second run never sees half a package


if __name__ == "__main__":
    found = tools()
    print(f"promtool:   {found.promtool}\nprometheus: {found.prometheus}")
