"""Every file a person writes for the controller — a configuration, a scenario, the grants —
that cannot be used is one line on stderr naming the file, the place and the problem, and exit
2: never a traceback, never minutes of expanding it first. Each case below once was a traceback
(or a 2.5 GB expansion) and is named after what it held."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.cli import main

BOMB = "a0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i + 1}: &a{i + 1} [*a{i}, *a{i}, *a{i}, *a{i}, *a{i}, *a{i}, *a{i}, *a{i}, *a{i}]\n"
    for i in range(20)
)
CEL_BOMB = BOMB + (
    "resources:\n - name: a\n   object: {apiVersion: v1, kind: ConfigMap, name: x}\n"
    "   healthRule:\n     cel: {current: *a20}\n"
)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(BOMB.encode(), "its aliases (*name) expand it beyond", id="a-yaml-alias-bomb"),
        pytest.param(
            CEL_BOMB.encode(), "its aliases (*name) expand it beyond", id="an-alias-bomb-as-cel"
        ),
        pytest.param(b"[" * 50_000, "nested deeper than it can be read", id="50000-brackets"),
        pytest.param(
            b"resources:\n - name: a\n   for: 99999999999999999999h\n   object: {apiVersion: v1,"
            b" kind: ConfigMap, name: x}\n   healthRule: {alwaysHealthy: {}}\n",
            "is longer than 87600h (10 years)",
            id="for-99999999999999999999h",
        ),
        pytest.param(b"profile: seed\n\xff\n", "not UTF-8 text", id="a-non-utf-8-byte"),
        pytest.param(b"profile: seed\nprofile: acm\n", "is given twice", id="duplicate-keys"),
    ],
)
def test_a_configuration_file_that_cannot_be_used_is_one_line_and_exit_2(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    content: bytes,
    problem: str,
) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    config = tmp_path / "config.yaml"
    config.write_bytes(content)
    assert main(["run", "--insecure", "--config", str(config)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"addon-status run: {config}: ") and problem in line
    assert len(line) < 400


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(BOMB.encode(), "aliases", id="a-yaml-alias-bomb"),
        pytest.param(b"steps: []\nsteps: []\n", "is given twice", id="duplicate-keys"),
        pytest.param(b"steps: [\xff]\n", "not UTF-8", id="a-non-utf-8-byte"),
    ],
)
def test_a_scenario_that_cannot_be_read_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, problem: str
) -> None:
    scenario = tmp_path / "scenario.yaml"
    scenario.write_bytes(content)
    assert main(["simulate", str(scenario)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert problem in line


@pytest.mark.parametrize("selector", ["env=pro d", "env=prod,", "x in (a", "Bad_Key/x=y", "=prod"])
def test_a_malformed_namespace_selector_is_refused_at_start(
    capsys: pytest.CaptureFixture[str], selector: str
) -> None:
    """kube-apiserver would answer its list with 400 at every resync: refused before."""
    assert main(["hub", "--kubeconfig", "/nonexistent", "--namespace-selector", selector]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert "--namespace-selector / ADDON_STATUS_NAMESPACE_SELECTOR" in line
