"""`addon-status completion bash|zsh`: a valid script, generated from the parsers, that
completes the commands and each command's flags."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from controller.cli import main

bash = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def _complete(script: str, *words: str) -> list[str]:
    """What bash offers after `addon-status WORDS...` (the last word is the one being typed)."""
    line = " ".join(["addon-status", *words])
    program = (
        f"{script}\nCOMP_WORDS=(addon-status {' '.join(repr(w) for w in words)})\n"
        f"COMP_CWORD={len(words)}\nCOMP_LINE={line!r}\n_addon_status\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    done = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=True)
    return done.stdout.split()


@bash
def test_the_bash_script_is_valid_and_completes_commands_and_flags(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = _script("bash", capsys)
    subprocess.run(["bash", "-n", "-c", script], check=True)
    assert _complete(script, "fl") == ["fleet"]
    assert "check" in _complete(script, "")
    assert _complete(script, "fleet", "--wat") == ["--watch"]
    assert _complete(script, "check", "h") == ["hub"]
    # a flag's value is not taken for a command
    assert "--hub-side" in _complete(script, "check", "hub", "--kubeconfig", "k", "--")
    assert _complete(script, "completion", "")[:2] == ["bash", "zsh"]
    # a deprecated spelling still works, but is not offered (kubectl hides it too)
    assert _complete(script, "hub", "--managed") == ["--managed-addon"]
    assert _complete(script, "fleet", "--addon-") == ["--addon-kind"]


@bash
def test_zsh_loads_the_same_script_through_bashcompinit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    script = _script("zsh", capsys)
    assert script.startswith("autoload -U +X bashcompinit && bashcompinit\n")
    assert script.endswith(_script("bash", capsys))


def test_an_unknown_shell_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["completion", "fish"])
    assert exited.value.code == 2
    assert "usage: addon-status completion" in capsys.readouterr().err
