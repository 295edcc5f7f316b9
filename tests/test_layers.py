"""The architecture is checked, not hoped for: the import contracts in pyproject.toml (the
layers from the command down to the core, the kubernetes client only behind the seam, kubesim
on its own and started only by the demo, the parts independent where they are, a core without
I/O, the in-memory fake kept from every other module) all hold; and no module is over 400
lines."""

from __future__ import annotations

import subprocess
import sys
import tomllib
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


def test_the_fakes_contract_covers_every_module_but_the_fakes_own() -> None:
    """A module added to the tree is a source of "the in-memory fake is for tests only" (or the
    fake's own, which that contract forbids): none escapes it by being new."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
    [contract] = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c["name"] == "the in-memory fake is for tests only"
    ]
    covered = [*contract["source_modules"], *contract["forbidden_modules"]]
    modules = {
        ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for package in ("controller", "statemachines", "kubesim")
        for path in (ROOT / package).rglob("*.py")
    }
    left_out = {
        module
        for module in modules - {"controller", "controller.kube"}  # listed module by module
        if not any(module == c or module.startswith(c + ".") for c in covered)
    }
    assert left_out == set()
