"""`addon-status simulate`: every shipped scenario holds; invalid files exit 2 naming the step
and field; a failed expectation exits 1 naming the step and why; `--format json` is parseable."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from controller.cli import main

Simulate = Callable[..., tuple[int, str, str]]
SCENARIOS = sorted((Path(__file__).parents[1] / "scenarios").glob("*.yaml"))

BOOT = """
steps:
  - at: 0s
    report: {reason: UpdateSuccessful}
  - at: 1m
    report: {collector: metrics-collector, reason: ForwardSuccessful}
    expect: {verdict: accepted, addon: %s}
"""


@pytest.fixture
def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Simulate:
    def run(text: str, *args: str) -> tuple[int, str, str]:
        path = tmp_path / "scenario.yaml"
        path.write_text(text)
        code = main(["simulate", str(path), *args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_shipped_scenario_holds(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(path)]) == 0, capsys.readouterr()
    out = capsys.readouterr().out
    assert "every expectation held" in out


def test_there_is_a_scenario_for_each_required_story() -> None:
    names = {p.stem for p in SCENARIOS}
    assert {
        "boot-both-collectors",
        "update-failure-blocks-available",
        "flap-absorbed",
        "failure-outlives-window",
        "dead-collector-goes-stale",
        "disable-and-reenable",
        "not-supported",
        "deployment-unavailable-shorter-and-longer-than-for",
        "multimatch-both-sides-match",
        "certificate-through-its-results",
        "object-deleted",
    } <= names


BROKEN_EXPRESSION = Path(__file__).parents[1] / "scenarios" / "invalid" / "broken-expression.yaml"


def test_broken_expression_makes_the_file_invalid_naming_resource_and_expression(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["simulate", str(BROKEN_EXPRESSION)]) == 2
    err = capsys.readouterr().err
    assert "resources[0] (app-certificate).healthRule.cel.current" in err
    assert "CEL 'isReady(status)' does not compile" in err


HEALTH = """
collectors: [metrics-collector]
resources:
  - name: config
    object: {apiVersion: v1, kind: ConfigMap, name: config}
    healthRule: {alwaysHealthy: {}}
steps:
  - at: 0s
    %s
"""


@pytest.mark.parametrize(
    ("step", "where"),
    [
        pytest.param(
            "object: {resource: nope, deleted: true}",
            "steps[0].object.resource: unknown resource; expected one of config",
            id="object-of-an-unknown-resource",
        ),
        pytest.param(
            "object: {resource: config, deleted: true, value: {}}",
            "steps[0].object: needs exactly one of `value` and `deleted: true`",
            id="object-with-value-and-deleted",
        ),
        pytest.param(
            "expect: {resources: {nope: {status: Unknown}}}",
            "steps[0].expect.resources.nope: unknown; expected one of config",
            id="expect-on-an-unknown-resource",
        ),
    ],
)
def test_invalid_object_steps_exit_2_naming_where(run_cli: Simulate, step: str, where: str) -> None:
    code, _, err = run_cli(HEALTH % step)
    assert code == 2
    assert where in err


def test_failed_expectation_exits_1_and_says_which_and_why(run_cli: Simulate) -> None:
    code, out, err = run_cli(BOOT % "Available")
    assert code == 1
    assert "steps[1] (at 1m): expected addon Available, got Progressing (UpdateSuccessful)" in err
    assert "FAILED" in out


def test_failed_story_expectations_say_what_was_found(run_cli: Simulate) -> None:
    """Sections 9 and 10: versions, history, related objects and lastKnownGood."""
    code, _, err = run_cli(
        "collectors: [metrics-collector]\nsteps:\n - at: 0s\n"
        "   report: {reason: UpdateSuccessful, version: 2.15.0}\n"
        "   expect:\n"
        "     versions: {metrics-collector: 2.15.0}\n"
        "     history: [{type: Available}, {type: Progressing}]\n"
        "     relatedObjects: [{resource: deployments}]\n"
        "     lastKnownGood: {generation: 1}\n"
    )
    assert code == 1
    assert "expected version of metrics-collector '2.15.0', got None" in err
    assert "history[0]: expected type 'Available', got 'Progressing'" in err
    assert "expected at least 2 history entries, got 1" in err
    assert "expected a related object {'resource': 'deployments'}, got []" in err
    assert "expected lastKnownGood, got none" in err


def test_held_expectation_exits_0(run_cli: Simulate) -> None:
    code, _, err = run_cli(BOOT % "Progressing")
    assert (code, err) == (0, "")


def test_json_format_is_machine_readable(run_cli: Simulate) -> None:
    code, out, _ = run_cli(BOOT % "Progressing", "--format", "json")
    result = json.loads(out)
    assert code == 0 and result["ok"] is True
    assert [row["verdict"]["verdict"] for row in result["timeline"]] == ["accepted", "accepted"]
    assert (
        result["timeline"][1]["collectors"]["metrics-collector"] == "Available (ForwardSuccessful)"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "steps: [", "line 2, column 1: not valid YAML", id="broken-yaml"
        ),  # at its end
        pytest.param("steps: []", "steps: required, a non-empty list", id="no-steps"),
        pytest.param("stepz: []", "stepz: unknown key", id="unknown-top-key"),
        pytest.param(
            "steps:\n - at: 0s\n   report: {collector: metrics-collector, reason: Forward}",
            "steps[0].report.reason: unknown reason 'Forward'",
            id="unknown-reason",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   report: {collector: prometheus, reason: ForwardFailure}",
            "steps[0].report.collector: 'prometheus' is not configured",
            id="unknown-collector",
        ),
        pytest.param(
            "collectors: [metrics-collector]\nsteps:\n - at: 0s\n"
            "   report: {collector: uwl-metrics-collector, reason: ForwardFailure}",
            "steps[0].report.collector: 'uwl-metrics-collector' is not configured",
            id="collector-not-configured",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {verdict: accepted}",
            "steps[0].expect.verdict: this step has no report",
            id="verdict-without-report",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {addon: Available, colour: red}",
            "steps[0].expect.colour: unknown key",
            id="unknown-expect-key",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {collectors: {prometheus: {state: Available}}}",
            "steps[0].expect.collectors.prometheus: unknown",
            id="unknown-collector-in-expect",
        ),
        pytest.param(
            "steps:\n - at: 2m\n   expect: {addon: Available}\n"
            " - at: 1m\n   expect: {addon: Available}",
            "steps[1].at: goes back in time",
            id="time-goes-back",
        ),
        pytest.param(
            "steps:\n - at: soon\n   expect: {addon: Available}",
            "steps[0].at: 'soon' is not a duration",
            id="bad-duration",
        ),
        pytest.param(
            "settings: {degradeAfter: ten}\nsteps:\n - at: 0s\n   expect: {addon: Available}",
            "settings.degradeAfter",
            id="bad-setting",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {conditions: {Healthy: {status: 'True'}}}",
            "steps[0].expect.conditions.Healthy: unknown",
            id="unknown-condition-type",
        ),
        pytest.param(
            "generation: 3\nsteps:\n - at: 0s\n   generation: 2",
            "steps[0].generation: goes back from 3",
            id="generation-goes-back",
        ),
        pytest.param(
            "generation: 0\nsteps:\n - at: 0s\n   expect: {addon: Progressing}",
            "generation: Input should be greater than or equal to 1",
            id="generation-zero",
        ),
        pytest.param(
            "generation: 9223372036854775808\nsteps:\n - at: 0s\n   expect: {addon: Progressing}",
            "generation: Input should be less than 9223372036854775808",
            id="generation-beyond-int64",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   generation: two",
            "steps[0].generation: Input should be a valid integer",
            id="generation-not-an-integer",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   report: {reason: UpdateSuccessful}\n"
            "   expect: {rule: Forbidden}",
            "steps[0].expect.rule: Input should be 'NoTransition'",
            id="rule-not-in-the-vocabulary",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {collectors: {metrics-collector: {stale: maybe}}}",
            "steps[0].expect.collectors.metrics-collector.stale: Input should be a valid boolean",
            id="stale-not-a-boolean",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {versions: {prometheus: 1.0.0}}",
            "steps[0].expect.versions.prometheus: unknown",
            id="unknown-collector-in-versions",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {versions: {metrics-collector: 2.15}}",
            "steps[0].expect.versions.metrics-collector: Input should be a valid string",
            id="an-unquoted-number-is-not-a-version",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   report: {reason: UpdateFailure, version: 2.15.0}",
            "steps[0].report.version: only an UpdateSuccessful report carries a version",
            id="a-version-with-another-reason",
        ),
        pytest.param(
            "settings: {historyLimit: -1}\nsteps:\n - at: 0s\n   expect: {addon: Progressing}",
            "settings.historyLimit",
            id="a-negative-history-limit",
        ),
        pytest.param(
            "relatedObjects: [{group: apps, name: x}]\nsteps:\n - at: 0s\n"
            "   expect: {addon: Progressing}",
            "relatedObjects[0]: resource and name are required",
            id="a-related-object-without-resource",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   expect: {history: [{type: Ready}]}",
            "steps[0].expect.history[0].type",
            id="history-of-standard-types-only",
        ),
        pytest.param(
            "steps:\n - at: 0s\n   note: nothing",
            "steps[0]: a step needs a `report`, a `generation`, an `object`, an `expect` or more",
            id="empty-step",
        ),
    ],
)
def test_invalid_file_exits_2_and_names_where(run_cli: Simulate, text: str, message: str) -> None:
    code, out, err = run_cli(text)
    assert code == 2
    assert out == ""
    assert message in err


def test_missing_file_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["simulate", str(tmp_path / "absent.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_an_expectation_may_spell_a_reason_the_seeds_way(run_cli: Simulate) -> None:
    code, _, err = run_cli(
        "steps:\n - at: 0s\n   report: {reason: UpdateSuccessful}\n"
        "   expect: {collectors: {metrics-collector: {reason: UpdateSuccesful}}}\n"
    )
    assert (code, err) == (0, "")


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_the_table_fits_the_terminal_and_wide_keeps_its_columns(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue item: `simulate`'s table was up to 262 columns wide. Within the terminal's width
    (COLUMNS, as the shell sets it) each step is a line and under it what changed; `--wide`
    is the table, one column per collector."""
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["simulate", str(path)]) == 0
    narrow = capsys.readouterr().out
    assert max(len(line) for line in narrow.splitlines()) <= 80, narrow
    assert main(["simulate", str(path), "--wide"]) == 0
    wide = capsys.readouterr().out
    header = next(line for line in wide.splitlines() if line.startswith("at "))
    assert header.split()[:3] == ["at", "event", "verdict"]
    assert header.split()[-2:] == ["addon", "write"]
    for text in (narrow, wide):
        assert "every expectation held" in text
