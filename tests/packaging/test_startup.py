"""`addon-status --help`, `--version`, `report`, `fleet` and `simulate` start without the
Kubernetes client and the embedded API server, which take most of a second and tens of MiB to
import, and all but `simulate` without pydantic too (`report` runs once per report in
collectors' scripts): each command runs in a fresh interpreter, which then lists what it
imported."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from controller.kube.kubeconfig import kubeconfig_yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
STORY = ROOT / "controller" / "demo" / "story.yaml"
HEAVY = ["kubernetes", "kubesim", "pydantic"]
PROBE = """
import json, sys
{preload}
from controller.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as stop:
    code = stop.code
loaded = sorted({m.split(".")[0] for m in sys.modules} & {"kubernetes", "kubesim", "pydantic"})
print(json.dumps({"code": code, "loaded": loaded}))
"""


def imported_by(*argv: str, preload: str = "", codes: tuple[int, ...] = (0, 2)) -> list[str]:
    """The heavy packages loaded once `addon-status ARGV` is done (after `preload`), which
    exits with one of `codes`."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.replace("{preload}", preload), *argv],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["code"] in codes, done.stderr
    loaded: list[str] = result["loaded"]
    return loaded


def unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["--version"], ["report", "--help"], ["simulate", "--help"]],
    ids=" ".join,
)
def test_help_and_version_import_none_of_them(argv: list[str]) -> None:
    assert imported_by(*argv) == []


def test_simulate_imports_neither_kubernetes_nor_kubesim() -> None:
    assert imported_by("simulate", str(STORY)) == ["pydantic"]  # the scenario format's


def test_report_imports_none_of_them() -> None:
    """The whole path of a report, up to the connection refused by a port nobody listens on."""
    url = f"http://127.0.0.1:{unused_port()}"
    assert imported_by("report", "--url", url, "--reason", "ForwardSuccessful",
                       "--timeout", "0.2", "--deadline", "0.5") == []  # fmt: skip


def test_fleet_imports_none_of_them(tmp_path: Path) -> None:
    """The whole path of the fleet view, up to a hub nobody answers for (exit 1): the view
    needs the names of the conditions, not the vocabulary's validated table."""
    kubeconfig = tmp_path / "hub"
    hub = f"http://127.0.0.1:{unused_port()}"
    kubeconfig.write_text(kubeconfig_yaml(server=hub, token="t"), "utf-8")
    assert imported_by("fleet", "--kubeconfig", str(kubeconfig), codes=(1,)) == []


def test_the_probe_sees_what_was_imported() -> None:
    """The counter-check: an empty list above means not imported, not unseen."""
    assert imported_by("--help", preload="import kubernetes, kubesim, pydantic") == HEAVY
