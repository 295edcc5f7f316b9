"""A mistyped flag is answered by its subcommand's parser, with that usage (as kubectl does)."""

from __future__ import annotations

import pytest

from controller.cli import main


@pytest.mark.parametrize("command", [["fleet"], ["check", "hub"], ["run"], ["hub"]])
def test_a_mistyped_flag_exits_2_with_the_subcommands_usage(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--no-such-flag"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(f"usage: addon-status {' '.join(command)} ")
    assert "unrecognized arguments: --no-such-flag" in err


@pytest.mark.parametrize("command", [["simulate"], ["diagrams"], ["check", "hub"], ["completion"]])
def test_help_has_a_description_examples_and_defaults(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]
    assert not description.lstrip().startswith(("positional", "options"))
    assert "addon-status " + " ".join(command) in out.split("\nexamples:\n")[1]
    if command != ["completion"]:
        assert "(default: " in out
