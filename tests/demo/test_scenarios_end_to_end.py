"""`addon-status demo --scenario FILE`: every scenario holds both on the core's fake clock
(`simulate`) and end to end (report API over HTTP, worker, status writer, watch, hub replication,
embedded spoke and hub API servers), with the same verdicts and transition times; a failed
expectation exits 1 naming the step, its time, what was expected and what was found; an invalid
file exits 2 saying where; a step without a report is played at its time; the hub copy must
follow the spoke CR."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from controller.cli import main
from controller.demo.command import DEFAULT_SCENARIO, running
from controller.demo.scenario_file import EPOCH, read
from controller.demo.scenario_run import Player, SteppedClock
from controller.demo.view import View
from kubesim.routing import RequestInfo

pytestmark = pytest.mark.slow

SCENARIOS = [*sorted((Path(__file__).parents[1] / "scenarios").glob("*.yaml")), DEFAULT_SCENARIO]
# The kinds of watched objects that scenarios use beyond the built-in ones.
CERTIFICATE_CRD = Path(__file__).parents[1] / "data" / "crds" / "certificates.cert-manager.io.yaml"

# The window opened at 5m ends at 15m; the last step has no report and expects the wrong type.
WRONG_AT_THE_END = """
settings: {degradeAfter: 10m}
collectors: [metrics-collector]
steps:
  - at: 0s
    report: {reason: UpdateSuccessful}
  - at: 1m
    report: {collector: metrics-collector, reason: ForwardSuccessful}
  - at: 5m
    report: {collector: metrics-collector, reason: ForwardFailure, message: remote write 503}
    expect: {verdict: pending}
  - at: 15m
    expect: {addon: Available}
"""


def _demo(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["demo", "--scenario", str(path), *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("path", SCENARIOS, ids=[p.stem for p in SCENARIOS])
def test_every_scenario_holds_in_simulate_and_end_to_end(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["simulate", str(path)]) == 0, capsys.readouterr()
    capsys.readouterr()
    code, out, err = _demo(path, capsys, "--crd", str(CERTIFICATE_CRD))
    assert (code, err) == (0, ""), out
    assert "every expectation held." in out
    assert "stopped before" not in out


def test_a_failed_expectation_exits_1_naming_the_step_its_time_and_what_was_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "wrong.yaml"
    path.write_text(WRONG_AT_THE_END)
    code, out, err = _demo(path, capsys)
    assert code == 1
    assert err.strip() == (
        f"{path}: steps[3] (at 15m): expected addon Available, got Degraded (ForwardFailure)"
    )
    assert "[ 15m00s] expect  FAILED" in out


def test_a_step_without_a_report_is_played_at_its_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "right.yaml"
    path.write_text(WRONG_AT_THE_END.replace("{addon: Available}", "{addon: Degraded}"))
    code, out, _ = _demo(path, capsys)
    assert code == 0
    # The window's timer fired at its deadline, not at the step's report time or later.
    assert "[ 15m00s] spoke   Degraded (ForwardFailure)" in out
    assert "[ 15m00s] hub     Degraded (ForwardFailure)" in out
    assert "[ 15m00s] expect  held" in out


def test_an_invalid_file_exits_2_saying_where_as_simulate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("steps:\n  - at: 1m\n    expect: {verdict: accepted}\n")
    assert main(["simulate", str(path)]) == 2
    simulated = capsys.readouterr().err
    code, out, err = _demo(path, capsys)
    assert (code, out, err) == (2, "", simulated)
    assert err.startswith(f"{path}: invalid scenario: steps[0].expect.verdict: ")


def test_the_time_scale_changes_no_verdict_or_transition_time(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # 16 scenario minutes at 1200x: under a second of pacing; lastTransitionTime 15m is expected.
    path = Path(__file__).parents[1] / "scenarios" / "failure-outlives-window.yaml"
    code, out, err = _demo(path, capsys, "--time-scale", "1200")
    assert (code, err) == (0, ""), out
    assert "pending: the dampening window ends at 15m00s" in out


def test_a_hub_copy_that_does_not_follow_fails_the_step(tmp_path: Path) -> None:
    path = tmp_path / "boot.yaml"
    path.write_text("steps:\n  - at: 0s\n    report: {reason: UpdateSuccessful}\n")
    scenario = read(path)
    clock = SteppedClock(EPOCH)
    out = io.StringIO()
    with running(scenario, clock) as demo:

        def hub_status_writes(info: RequestInfo) -> bool:
            return info.subresource == "status" and info.verb in ("update", "patch")

        demo.hub.faults.fail_next(10**6, 500, match=hub_status_writes)
        view = View(clock, EPOCH, out)
        stop = threading.Event()
        player = Player(
            scenario, demo.system, clock=clock, view=view, scale=None, stop=stop, patience=0.5
        )
        result = player.run()
        demo.hub.faults.reset()  # so that the demo stops without waiting for the hub
    # The controller's first status may have reached the hub before the fault was armed: the
    # first condition that differs is then a later one (Available may read the same before and
    # after the report), named with what the spoke says.
    failure = result.failures[-1]
    named = re.match(
        r"steps\[0\] \(at 0s\): the hub copy did not follow within 0\.5s: condition (\w+): "
        r"expected \{'type': '(\w+)'",
        failure,
    )
    assert named and named[1] == named[2] in ("Available", "Progressing"), result.failures
    expected = failure.split("expected ", 1)[1].split(", found ", 1)[0]
    assert "'reason': 'UpdateSuccessful'" in expected, failure


def test_a_crd_file_that_is_not_there_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "boot.yaml"
    path.write_text("steps:\n  - at: 0s\n    report: {reason: UpdateSuccessful}\n")
    code, _, err = _demo(path, capsys, "--crd", str(tmp_path / "missing.yaml"))
    assert code == 2
    assert err.strip() == f"addon-status demo: --crd {tmp_path / 'missing.yaml'}: no such file"


def test_an_object_of_a_kind_the_spoke_does_not_serve_fails_the_run_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    certificate = Path(__file__).parents[1] / "scenarios" / "certificate-through-its-results.yaml"
    code, _, err = _demo(certificate, capsys)
    assert code == 1
    assert "cert-manager.io/v1 Certificate is not served by the embedded spoke" in err


def test_run_and_demo_leave_no_discovery_directory_behind(tmp_path: Path) -> None:
    """Issue item: every `run` with health rules and every `demo` left an
    `/tmp/addon-status-discovery-*` directory behind. The demo runs the spoke's replica with
    object watches (discovery included) in its own process; its temporary files go under
    TMPDIR, which must be empty again when it exits."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    scenario = Path(__file__).parents[1] / "scenarios" / "object-deleted.yaml"
    env = {**os.environ, "TMPDIR": str(temporary)}
    ran = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--scenario", str(scenario)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "every expectation held." in ran.stdout
    assert list(temporary.iterdir()) == []
