"""Issue 35.3: three alerts followed end to end in the demo, each to its fix, exactly as
docs/runbook.md's walks go (Walks in the demo). One demo plays the silent-collector story
(controller/demo/story_silent_collector.yaml) at 600x and follows; then, for each alert:

1. it is raised (the story, or `addon-status report` against the demo's report API);
2. the alert's expression, as monitoring/rules states it, holds on the demo's /metrics (the
   spoke's, or the hub side's), `time()` being the demo hub's clock (the `Date` it answers);
3. the command its runbook entry starts from (`fleet CLUSTER`, `check spoke`) names the cause;
4. the fix is applied (the collector reports again, or forwards);
5. the expression no longer holds.

The alerts' `for:` clauses are Prometheus' to count; the expressions are what the test holds
to the rules' text."""

from __future__ import annotations

import email.utils
import re
import urllib.request
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from controller.cli import main
from tests.demo.test_fleet_demo import Demo
from tests.support import eventually

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
STORY = ROOT / "controller/demo/story_silent_collector.yaml"
UWL, MC = "uwl-metrics-collector", "metrics-collector"
Samples = list[tuple[str, dict[str, str], float]]


def _rule(alert: str) -> str:
    """The alert's expression as monitoring/rules ships it, whitespace folded."""
    for path in sorted((ROOT / "monitoring/rules").glob("*.yaml")):
        for group in yaml.safe_load(path.read_text("utf-8"))["groups"]:
            for rule in group["rules"]:
                if rule.get("alert") == alert:
                    return " ".join(str(rule["expr"]).split())
    raise AssertionError(f"no alert {alert} in monitoring/rules")


def _scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=10) as answer:
        text = answer.read().decode()
    return [(s.name, s.labels, s.value)
            for family in text_string_to_metric_families(text) for s in family.samples]  # fmt: skip


def _hub_time(hub: str) -> float:
    """The demo hub's clock (the story's): the `Date` of its answer."""
    with urllib.request.urlopen(f"{hub}/version", timeout=10) as answer:
        return email.utils.parsedate_to_datetime(answer.headers["Date"]).timestamp()


def _condition(samples: Samples, condition: str) -> float:
    """max(addon_status_addon_condition{condition=..., status="true"}): one addon per spoke."""
    return max(v for n, labels, v in samples if n == "addon_status_addon_condition"
               and labels == {"condition": condition, "status": "true"})  # fmt: skip


def addon_degraded(spoke_metrics: str) -> bool:
    """AddonStatusAddonDegraded, for the demo's one namespace."""
    assert _rule("AddonStatusAddonDegraded") == (
        'max by (namespace) (addon_status_addon_condition{condition="Degraded", '
        'status="true"}) == 1'
    )
    return _condition(_scrape(spoke_metrics), "Degraded") == 1


def addon_not_ready(spoke_metrics: str) -> bool:
    """AddonStatusAddonNotReady, for the demo's one namespace."""
    assert _rule("AddonStatusAddonNotReady") == (
        'max by (namespace) (addon_status_addon_condition{condition="Ready", status="true"}) == 0'
    )
    return _condition(_scrape(spoke_metrics), "Ready") == 0


def cluster_degraded(hub_side_metrics: str, hub: str, cluster: str) -> bool:
    """AddonStatusClusterDegraded for `cluster`: its state series says Degraded (not Disabled
    or NotSupported) and its `since` is more than 30 minutes before the hub's time()."""
    assert _rule("AddonStatusClusterDegraded") == (
        'max by (cluster, reason) ( addon_status_hub_cluster_state{type="Degraded", '
        'reason!~"Disabled|NotSupported"} ) and on (cluster) min by (cluster) (time() - '
        "addon_status_hub_cluster_state_since_timestamp_seconds) > 1800"
    )
    samples, now = _scrape(hub_side_metrics), _hub_time(hub)
    degraded = any(n == "addon_status_hub_cluster_state" and labels["cluster"] == cluster
                   and labels["type"] == "Degraded"
                   and labels["reason"] not in ("Disabled", "NotSupported")
                   for n, labels, _ in samples)  # fmt: skip
    since = [v for n, labels, v in samples
             if n == "addon_status_hub_cluster_state_since_timestamp_seconds"
             and labels == {"cluster": cluster}]  # fmt: skip
    return degraded and bool(since) and now - min(since) > 1800


class Walk:
    """What the walks type, against the running demo."""

    def __init__(self, demo: Demo, capsys: pytest.CaptureFixture[str]) -> None:
        self.capsys = capsys
        eventually(lambda: demo.said("follow  the play is over"), timeout=120, what="the play")
        banner = {found[1]: found[2] for line in demo.lines
                  if (found := re.match(r"^  (\S.*?)\s{2,}(\S.*)$", line))}  # fmt: skip
        self.report_url = banner["report API"].split()[0].removesuffix("/v1/reports")
        self.spoke_metrics = banner["metrics"]
        self.hub = banner["hub API server"].split()[0]
        self.hub_side_metrics = banner["hub side metrics"]
        self.kubeconfig = banner["hub kubeconfig"]
        self.check_spoke = banner["check spoke"].split()[1:]  # addon-status check spoke ...

    def run(self, *args: str) -> str:
        """`addon-status ARGS`: its output (exit code 0 asserted)."""
        self.capsys.readouterr()
        code = main(list(args))
        out = self.capsys.readouterr().out
        assert code == 0, out
        return out

    def report(self, reason: str, *, collector: str | None = None, **more: str) -> str:
        args = ["report", "--url", self.report_url, "--reason", reason]
        args += ["--collector", collector] if collector else []
        for flag, value in more.items():
            args += [f"--{flag.replace('_', '-')}", value]
        return self.run(*args)

    def fleet(self, cluster: str) -> str:
        return self.run("fleet", "--kubeconfig", self.kubeconfig, cluster)


def _until(holds: Callable[[], bool], what: str) -> None:
    eventually(holds, timeout=60, what=what)


def test_three_alerts_walked_to_their_fix_in_the_demo(capsys: pytest.CaptureFixture[str]) -> None:
    demo = Demo("--scenario", str(STORY), "--time-scale", "600", "--duration", "600")
    try:
        walk = Walk(demo, capsys)

        # 1. AddonStatusClusterDegraded, ReportsStale: the story left uwl-metrics-collector
        # silent; 30 minutes of the demo's clock later the hub side's expression holds.
        _until(lambda: cluster_degraded(walk.hub_side_metrics, walk.hub, "cluster1"),
               "AddonStatusClusterDegraded's expression")  # fmt: skip
        shown = walk.fleet("cluster1")  # the runbook: fleet CLUSTER names the silent collector
        assert "State:     Degraded (ReportsStale)" in shown, shown
        assert "UwlMetricsCollector: ReportsStale (no report for 15m (staleAfter)" in shown
        checked = walk.run(*walk.check_spoke)  # ... and check spoke: the report API answers,
        assert "the report API answers on 127.0.0.1:" in checked, checked  # the collector is mute
        walk.report("ForwardSuccessful", collector=UWL, message="metrics sent")  # the fix
        _until(lambda: not cluster_degraded(walk.hub_side_metrics, walk.hub, "cluster1"),
               "AddonStatusClusterDegraded's expression to clear")  # fmt: skip

        # 2. AddonStatusAddonDegraded, ForwardFailure: the collector's remote write fails.
        assert not addon_degraded(walk.spoke_metrics)
        walk.report("ForwardFailure", collector=UWL, message="remote write 503")
        _until(lambda: addon_degraded(walk.spoke_metrics), "AddonStatusAddonDegraded's expr")
        shown = walk.fleet("cluster1")
        assert "UwlMetricsCollector: ForwardFailure (remote write 503)" in shown, shown
        walk.report("ForwardSuccessful", collector=UWL, message="metrics sent")  # it forwards
        _until(lambda: not addon_degraded(walk.spoke_metrics), "Degraded to clear")

        # 3. AddonStatusAddonNotReady: an update the collectors never forward after.
        assert not addon_not_ready(walk.spoke_metrics)
        walk.report("UpdateSuccessful", message="rolled out 2.14.1", version="2.14.1")
        _until(lambda: addon_not_ready(walk.spoke_metrics), "AddonStatusAddonNotReady's expr")
        shown = walk.fleet("cluster1")
        assert "State:     Progressing (UpdateSuccessful)" in shown, shown
        [ready] = [line.split() for line in shown.splitlines() if line.startswith("  Ready ")]
        assert ready[1:3] == ["False", "NotAvailable"], shown
        for collector in (MC, UWL):  # each collector's new pod forwards
            walk.report("ForwardSuccessful", collector=collector, message="metrics sent")
        _until(lambda: not addon_not_ready(walk.spoke_metrics), "Ready to come back")
    finally:
        code, out, err = demo.end()
    assert code == 0, err
    assert out.rstrip().splitlines()[-1].startswith("hub:   Available (ForwardSuccessful)"), out
