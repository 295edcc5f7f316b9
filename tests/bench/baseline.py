"""A commit's tree beside this one, for a benchmark that measures both in one run.

`worktree(REV)` checks REV out into a temporary directory (`git worktree add --detach`) and
removes it afterwards; `run_in(tree, script, *args)` runs a benchmark script of that tree in a
fresh process whose imports (`statemachines`, `controller`, `kubesim`, `tests`) are that tree's.
Benchmarks alternate the two trees run by run, so that the machine's load falls on both alike.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["ROOT", "figures_of", "run_in", "worktree"]

ROOT = Path(__file__).resolve().parents[2]
# A benchmark's table row: `  name:  median  run1 run2 ...`
_ROW = re.compile(r"^  (?P<name>[^:]+):\s+(?P<median>-?[\d,]+(?:\.\d+)?)(?:\s+-?[\d.]+)*\s*$")


@contextlib.contextmanager
def worktree(revision: str) -> Iterator[Path]:
    """`revision` checked out beside this tree, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="addon-status-baseline-") as scratch:
        path = Path(scratch) / "tree"
        git = ["git", "-C", str(ROOT), "worktree"]
        subprocess.run([*git, "add", "--quiet", "--detach", str(path), revision], check=True)
        try:
            yield path
        finally:
            subprocess.run([*git, "remove", "--force", str(path)], check=False)


def run_in(tree: Path, script: str, *args: str) -> str:
    """`tree`'s `tests/bench/<script>` with `args`, importing `tree`'s packages; its output."""
    done = subprocess.run(
        [sys.executable, str(tree / "tests" / "bench" / script), *args],
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tree,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{script} in {tree} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def figures_of(output: str) -> dict[str, float]:
    """The median column of a benchmark's table, by figure name."""
    found = {}
    for line in output.splitlines():
        if match := _ROW.match(line):
            found[match["name"].strip()] = float(match["median"].replace(",", ""))
    return found
