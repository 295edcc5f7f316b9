"""`addon-status completion bash|zsh`: a shell completion script generated from the parsers
themselves, so that a flag added to a command completes without a second list to keep.

zsh loads the bash script through bashcompinit (zsh's documented bridge), as kubectl's users
source `<(kubectl completion zsh)`."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator

__all__ = ["script", "words"]

SHELLS = ("bash", "zsh")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:  # argparse keeps no public list of its subcommands
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _flags(parser: argparse.ArgumentParser) -> list[str]:
    """The long flags but deprecated spellings (hidden from `--help`, as kubectl hides them),
    and a positional's choices (`completion bash|zsh`)."""
    choices = [
        str(c) for a in parser._actions
        if not a.option_strings and a.choices and not isinstance(a, argparse._SubParsersAction)
        for c in a.choices
    ]  # fmt: skip
    return [
        *choices,
        *sorted(
            o
            for a in parser._actions
            if a.help != argparse.SUPPRESS
            for o in a.option_strings
            if o.startswith("--")
        ),
    ]


def words(
    commands: list[str], parser_of: Callable[[str], argparse.ArgumentParser]
) -> Iterator[tuple[str, list[str]]]:
    """(the words typed so far, space-joined; what may follow them): a subcommand's own
    subcommands and flags, for each command and its subcommands."""
    yield "", commands
    for name in commands:
        parser = _subparsers(parser_of(name))[name]
        nested = _subparsers(parser)
        yield name, [*nested, *_flags(parser)]
        for inner, sub in nested.items():
            yield f"{name} {inner}", _flags(sub)


def script(
    shell: str, commands: list[str], parser_of: Callable[[str], argparse.ArgumentParser]
) -> str:
    cases = "\n".join(
        f'        "{typed}") options="{" ".join(following)}" ;;'
        for typed, following in words(commands, parser_of)
    )
    body = f"""_addon_status() {{
    local cur="${{COMP_WORDS[COMP_CWORD]}}" typed="" word options=""
    for word in "${{COMP_WORDS[@]:1:COMP_CWORD-1}}"; do
        # the command, and check's spoke|hub; other words are flags' values
        case "$word" in
            -*) ;;
            *) [[ -z "$typed" || "$typed" == check ]] && typed="${{typed:+$typed }}$word" ;;
        esac
    done
    case "$typed" in
{cases}
    esac
    COMPREPLY=($(compgen -W "$options" -- "$cur"))
}}
complete -o default -F _addon_status addon-status
"""
    if shell == "zsh":
        return "autoload -U +X bashcompinit && bashcompinit\n" + body
    return body
