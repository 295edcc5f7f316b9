"""`addon-status hub`: its flags load no kubernetes client, and what a user can get wrong is one
line on stderr with an exit code, never a traceback."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.cli import main

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _logging_restored() -> Iterator[None]:
    """`hub` configures logging for the process (a JSON handler on the stderr pytest captures
    and then closes): the tests after these must not inherit it."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in [h for h in root.handlers if h not in handlers]:
        root.removeHandler(handler)
    root.setLevel(level)


def test_the_hub_flags_load_no_kubernetes_client() -> None:
    code = (
        "import argparse, sys\n"
        "from controller.hub.options import add_hub_flags\n"
        "add_hub_flags(argparse.ArgumentParser())\n"
        "print('kubernetes' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert done.stdout.strip() == "False"


def test_help_names_the_flags(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["hub", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--managed-addon", "--namespace-selector", "--resync", "--leader-elect"):
        assert flag in out
    assert "--addon-name" not in out  # its old spelling, deprecated: hidden, as kubectl does


def test_a_hub_kubeconfig_that_is_not_valid_is_a_one_line_start_up_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text("clusters: [", encoding="utf-8")
    code = main(
        [
            "hub",
            "--kubeconfig",
            str(kubeconfig),
            "--metrics-address",
            "127.0.0.1:0",
            "--probe-address",
            "127.0.0.1:0",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("addon-status hub: cannot start:") and str(kubeconfig) in err


def test_durations_out_of_order_exit_2_naming_the_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["hub", "--leader-elect", "--lease-duration", "5", "--renew-deadline", "10"])
    assert code == 2
    assert "need lease duration > renew deadline > retry period" in capsys.readouterr().err


def test_an_address_that_is_not_host_port_exits_2_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["hub", "--metrics-address", "8080"]) == 2
    assert "--metrics-address" in capsys.readouterr().err
