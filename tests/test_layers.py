"""The architecture is checked, not hoped for: the import contracts in pyproject.toml (the
layers from the command down to the core, the kubernetes client only behind the seam, kubesim
on its own and started only by the demo, the parts independent where they are, a core without
I/O) all hold; and no module is over 400 lines."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_import_contracts_hold() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    result = subprocess.run(
        [str(lint_imports), "--config", str(ROOT / "pyproject.toml")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert " kept, 0 broken." in result.stdout


def test_no_module_is_over_400_lines() -> None:
    """Small modules with one reason to change: a module that grows past 400 lines is split
    where its parts are (docs/architecture.md)."""
    long = {
        str(path.relative_to(ROOT)): count
        for package in ("controller", "statemachines", "kubesim")
        for path in (ROOT / package).rglob("*.py")
        if (count := len(path.read_text("utf-8").splitlines())) > 400
    }
    assert long == {}
