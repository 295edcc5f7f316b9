"""The command line: `addon-status --help` lists every command with the summary the command's
own parser registers (the list is built without importing them); `--version` prints the
installed version; a command parses its own flags only; an unknown command is a usage error."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import COMMANDS, main, parser


@pytest.mark.parametrize("command", list(COMMANDS))
def test_help_lists_each_command_with_its_own_summary(command: str) -> None:
    assert parser(command).format_help() == parser().format_help()


def test_version_prints_the_version_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert re.fullmatch(r"addon-status \S+\n", capsys.readouterr().out)


def test_a_command_takes_its_own_flags_only(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["simulate", "story.yaml", "--kubeconfig", "k"])
    assert stop.value.code == 2
    assert "unrecognized arguments: --kubeconfig k" in capsys.readouterr().err


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["deploy"])
    assert stop.value.code == 2
    assert "invalid choice: 'deploy'" in capsys.readouterr().err


def test_a_reader_that_goes_away_ends_a_command_quietly(tmp_path: Path) -> None:
    """`addon-status simulate FILE | head`: a BrokenPipeError ends the command with no
    traceback, in every command (controller/cli.py)."""
    steps = "\n".join(
        f"  - at: {i}s\n    report: {{collector: metrics-collector, reason: ForwardSuccessful}}"
        for i in range(3000)
    )
    scenario = tmp_path / "long.yaml"
    scenario.write_text(f"collectors: [metrics-collector]\nsteps:\n{steps}\n", "utf-8")
    command = [sys.executable, "-m", "controller.cli", "simulate", str(scenario)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.read(100)
        process.stdout.close()  # the reader has seen enough
        err = process.stderr.read().decode()
        code = process.wait(60)
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
    assert code in (0, 1)
