"""Issue 35.7: the demo is honest about time. After the play (and the fleet's epilogue) the
demo's clock runs on and its collectors report on, each its last word at its interval, so that
long after the staleness window (15 minutes of the demo's clock, 1.5 s at 600x) `fleet` and the
CRs still show what the story left: no cluster turns `ReportsStale` because the play is over.
The spokes' clocks first catch up with the hub's, which the epilogue moved on alone."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from controller.cli import main
from tests.demo.test_fleet_demo import Demo
from tests.support import eventually

pytestmark = pytest.mark.slow

SHORT = """
name: short
collectors: [metrics-collector, uwl-metrics-collector]
steps:
  - at: 0s
    report: {reason: UpdateSuccessful}
  - at: 1m
    report: {collector: metrics-collector, reason: ForwardSuccessful, message: metrics sent}
  - at: 2m
    report: {collector: uwl-metrics-collector, reason: ForwardSuccessful, message: metrics sent}
    expect: {addon: Available}
"""
WINDOW = 15 * 60  # the staleness window, 3 report intervals by default (docs/spec.md §4)


def _seconds(line: str) -> int:
    minutes, seconds = re.findall(r"^\[\s*(\d+)m(\d+)s\]", line)[0]
    return int(minutes) * 60 + int(seconds)


def test_after_the_play_the_fleet_stays_as_the_story_left_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    story = tmp_path / "short.yaml"
    story.write_text(SHORT)
    demo = Demo("--clusters", "2", "--scenario", str(story), "--time-scale", "600",
                "--duration", "300")  # fmt: skip
    try:
        kubeconfig = demo.hub_kubeconfig()
        eventually(lambda: demo.said("cluster2 follow  the play is over"), timeout=120,
                   what="the end of the play and the epilogue")  # fmt: skip
        over = _seconds(next(line for line in demo.lines if "follow  the play is over" in line))

        def again_after(seconds: int) -> bool:  # each spoke's collectors reported on so long
            late = [line for line in list(demo.lines)
                    if "again, every 5m" in line and _seconds(line) > seconds]  # fmt: skip
            return all(any(f"] {c} report" in line for line in late)
                       for c in ("cluster1", "cluster2"))  # fmt: skip

        eventually(lambda: again_after(over + WINDOW + 5 * 60), timeout=60,
                   what="the demo's clock well past the staleness window")  # fmt: skip
        assert main(["fleet", "--kubeconfig", str(kubeconfig), "-o", "json"]) == 0
        document = json.loads(capsys.readouterr().out)
    finally:
        code, out, err = demo.end()
    assert code == 0, err
    assert "ReportsStale" not in out
    rows = {c["cluster"]: (c["state"], c["reason"]) for c in document["clusters"]}
    assert rows == {c: ("Available", "ForwardSuccessful") for c in ("cluster1", "cluster2")}, rows
    # the collectors' reports after the play are heartbeats: nothing was written for them
    assert re.search(r"\n\d+ reports \(0 refused, \d+ after the play by its collectors\)", out)
    closing = out.rstrip().splitlines()[-4:]
    assert [line.split(":", 1)[1].split()[:2] for line in closing] == [
        ["Available", "(ForwardSuccessful)"]] * 4, closing  # fmt: skip
