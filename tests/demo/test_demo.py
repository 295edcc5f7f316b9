"""`addon-status demo`: one command brings up a spoke and a hub API server, the real controller
and simulated reporters; the story reaches the hub; `--duration` and Ctrl-C end it cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.cli import main
from controller.demo.command import DEFAULT_SCENARIO
from controller.reporter.client import ReportClient
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.support import MC

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]


def demo(*args: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_default_story_plays_to_the_hub() -> None:
    result = demo("--time-scale", "400")
    out = result.stdout
    assert result.returncode == 0, result.stderr
    assert "report API        http://127.0.0.1:" in out and "/metrics" in out
    assert "REFUSED by RequiresForwardFailure" in out
    # The window opens with the report at 5m, on the story's clock at any scale.
    assert "pending: the dampening window ends at 15m00s" in out
    assert "16 checked steps: every expectation held." in out
    # The Deployment that lost its replicas at 28m counts at 30m, long before staleness (41m).
    assert "[ 28m00s] health  metrics-collector-deployment Healthy (Current, Failed pending)" in out
    assert "[ 30m00s] hub     Degraded (ResourceUnhealthy)" in out
    degraded = [line for line in out.splitlines() if "hub     Degraded (ForwardFailure)" in line]
    assert degraded, out
    summary = out.split("\n\n")[-1]
    assert "14 reports (1 refused)" in summary
    spoke, hub = [
        line.split(":", 1)[1].strip().split("  ")[0] for line in summary.splitlines()[-2:]
    ]
    assert spoke == hub == "Available (ForwardSuccessful)"


def test_the_built_in_story_holds_as_a_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(DEFAULT_SCENARIO)]) == 0, capsys.readouterr().err


def test_the_story_watches_what_the_shipped_configuration_watches() -> None:
    shipped = build(MANIFESTS / "base").objects
    text = find(shipped, "ConfigMap", "addon-status-config")["data"]["config.yaml"]
    story = yaml.safe_load(DEFAULT_SCENARIO.read_text(encoding="utf-8"))
    assert story["resources"] == yaml.safe_load(text)["resources"]


def test_duration_ends_the_demo_cleanly() -> None:
    result = demo("--time-scale", "10", "--duration", "3")
    assert result.returncode == 0, result.stderr
    assert "reports (" in result.stdout


def test_ctrl_c_ends_the_demo_cleanly() -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--time-scale", "10"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdout is not None
    for line in process.stdout:
        if "report  " in line:
            break
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    assert "reports (" in out


def test_an_invalid_scenario_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("steps:\n - at: 0s\n   report: {reason: Nope}\n")
    result = demo("--scenario", str(path))
    assert result.returncode == 2
    assert "steps[0].report.reason" in result.stderr


HAND_SENT = """
name: short
settings: {degradeAfter: 0s}
collectors: [metrics-collector]
steps:
  - at: 0s
    report: {reason: UpdateSuccessful}
  - at: 1m
    report: {collector: metrics-collector, reason: ForwardSuccessful}
    expect: {addon: Available}
"""


def test_demo_duration_prints_hand_sent_reports_and_closes_with_the_crs_at_exit(
    tmp_path: Path,
) -> None:
    """Issue item: with --scenario and --duration, reports sent by hand after the play were
    judged and written but not printed, and the closing spoke:/hub: lines showed the state at
    the end of the play instead of the CRs' at exit."""
    scenario = tmp_path / "short.yaml"
    scenario.write_text(HAND_SENT)
    process = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--scenario", str(scenario),
         "--duration", "8"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    seen: list[str] = []
    url = ""
    for line in process.stdout:
        seen.append(line)
        if "report API" in line:
            url = line.split()[2].removesuffix("/v1/reports")
        if "the play is over" in line:
            break
    assert url, "".join(seen)
    with ReportClient(url) as reporter:
        answer = reporter.report(MC, reason="ForwardFailure", message="remote write 503")
    assert answer["verdict"] == "accepted"  # no window configured: at once
    out = "".join(seen) + process.stdout.read()
    assert process.wait(30) == 0, process.stderr.read() if process.stderr else ""
    assert "metrics-collector: ForwardFailure 'remote write 503' => accepted" in out
    # the summary counts it with the play's two
    assert "\n3 reports (0 refused, 1 sent by hand);" in out, out
    summary = out.split("\n\n")[-1].splitlines()
    assert summary[-2].startswith("spoke: Degraded (ForwardFailure)"), out
    assert summary[-1].startswith("hub:   Degraded (ForwardFailure)"), out


WAITS = """
name: waits
collectors: [metrics-collector]
steps:
  - at: 0s
    report: {reason: UpdateSuccessful}
  - at: 10m
    report: {collector: metrics-collector, reason: ForwardSuccessful}
    expect: {addon: Available}
"""


def test_a_report_sent_by_hand_while_the_story_plays_is_printed_with_its_verdict(
    tmp_path: Path,
) -> None:
    """Issue item: a report sent by hand during the play was judged but never printed. The
    story waits 10 minutes (10 s at 60x) between its steps: one sent then shows at once."""
    scenario = tmp_path / "waits.yaml"
    scenario.write_text(WAITS)
    process = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "demo", "--scenario", str(scenario),
         "--time-scale", "60"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    seen: list[str] = []
    url = ""
    for line in process.stdout:
        seen.append(line)
        if "report API" in line:
            url = line.split()[2].removesuffix("/v1/reports")
        if "UpdateSuccessful" in line and "=> accepted" in line:
            break  # the first step was played; the next is 10 minutes of story away
    assert url, "".join(seen)
    with ReportClient(url) as reporter:
        reporter.report(MC, reason="ForwardFailure", message="sent by a person")
    out = "".join(seen) + process.stdout.read()
    assert process.wait(60) == 0, process.stderr.read() if process.stderr else ""
    [by_hand] = [line for line in out.splitlines() if "sent by a person" in line]
    assert by_hand.endswith("=> accepted   # sent by hand"), by_hand
    assert out.index("sent by a person") < out.index("metrics-collector: ForwardSuccessful")
