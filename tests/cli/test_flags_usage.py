"""Every command's flags as a user meets them (docs/reference/cli.md): a mistyped flag is
answered by its subcommand's parser, with that usage (as kubectl does); every `--help` has a
description, examples and each flag's default; a renamed flag keeps its old spelling, which
warns once on stderr (as kubectl's deprecated flags do) and is hidden from `--help`."""

from __future__ import annotations

import argparse
import re

import pytest

from controller.cli import COMMANDS, main, parser
from controller.flags import given
from controller.hub.options import HUB_FLAGS

EVERY_COMMAND = [["check", "spoke"], ["check", "hub"]] + [[c] for c in COMMANDS if c != "check"]
DEPRECATED = "Flag --addon-name has been deprecated, use --managed-addon instead\n"


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


def _subparser(command: list[str]) -> argparse.ArgumentParser:
    found = parser(command[0])
    for word in command:
        [action] = [a for a in found._actions if isinstance(a, argparse._SubParsersAction)]
        found = action.choices[word]
    return found


@pytest.mark.parametrize("command", EVERY_COMMAND, ids=" ".join)
def test_help_has_a_description_examples_and_every_flags_default(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    description = out.split("\n\n")[1]
    assert not description.lstrip().startswith(("positional", "options"))
    examples = out.split("\nexamples:\n")[1]
    assert re.search(rf"^  .*addon-status {' '.join(command)}\b", examples, re.M), examples
    shown = [
        action.option_strings or [action.dest]
        for action in _subparser(command)._actions
        if action.help not in (argparse.SUPPRESS, None)
        and not isinstance(action, argparse._HelpAction)
        and not action.required
        and "(default: " not in action.help
    ]
    assert shown == []  # every flag that may be left out says what it then is


@pytest.mark.parametrize(
    ("command", "field"),
    [(["hub"], "addon_name"), (["fleet"], "addon_name"), (["check", "hub"], "addon_name")],
    ids=["hub", "fleet", "check hub"],
)
def test_addon_name_off_run_is_a_deprecated_spelling_of_managed_addon(
    command: list[str], field: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--addon-name` named the addon CR on `run` and the ManagedClusterAddOn elsewhere: one
    name, one object now; the old spelling sets the new flag and warns once."""
    words = [*command, "--addon-name", "old", "--addon-name=observability-controller"]
    args = parser(command[0]).parse_args(words)
    assert getattr(args, field) == "observability-controller"
    assert capsys.readouterr().err == DEPRECATED
    new = parser(command[0]).parse_args([*command, "--managed-addon", "observability-controller"])
    assert getattr(new, field) == "observability-controller"
    assert capsys.readouterr().err == ""


def test_on_run_addon_name_is_the_addon_cr_and_says_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parser("run").parse_args(["run", "--addon-name", "addon-status"])
    assert args.addon_name == "addon-status"
    assert capsys.readouterr().err == ""
    with pytest.raises(SystemExit):
        parser("run").parse_args(["run", "--managed-addon", "addon-status"])


def test_the_hub_sides_old_variable_is_taken_with_a_warning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = parser("hub").parse_args(["hub"])
    environ = {"ADDON_STATUS_ADDON_NAME": "observability-controller"}
    assert given(args, environ, HUB_FLAGS) == {"addon_name": "observability-controller"}
    assert capsys.readouterr().err == (
        "ADDON_STATUS_ADDON_NAME has been deprecated, use ADDON_STATUS_MANAGED_ADDON instead\n"
    )
    environ["ADDON_STATUS_MANAGED_ADDON"] = "addon-status"  # the new one wins, silently
    assert given(args, environ, HUB_FLAGS) == {"addon_name": "addon-status"}
    assert capsys.readouterr().err == ""


def test_hidden_spellings_are_not_shown(capsys: pytest.CaptureFixture[str]) -> None:
    for command in (["hub"], ["fleet"], ["check", "hub"]):
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        out = capsys.readouterr().out
        assert "--managed-addon" in out and "--addon-name" not in out
