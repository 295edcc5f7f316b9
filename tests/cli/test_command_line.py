"""The command line: `addon-status --help` lists every command with the summary the command's
own parser registers (the list is built without importing them); `--version` prints the
installed version; a command parses its own flags only; an unknown command is a usage error."""

from __future__ import annotations

import re

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
