"""`addon-status demo --clusters N`: N spokes, each with its own controller, replicate into one
hub whose kubeconfig the demo prints; `addon-status fleet` pointed at it lists every cluster
while the demo runs; the second spoke plays an outage of its own; every spoke's expectations
are checked on its own timeline (started 10 s of scenario time after the one before); the
story runs in the present, so `fleet` beside it reads the times the demo prints; the lines of
the fleet never go back in time, and its summary closes the play; after the stories an epilogue
breaks and mends the path from two spokes (an agent stopped, a cluster lost), and the fleet's
lines show what OCM and the ACM console say of each cluster."""

from __future__ import annotations

import itertools
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from controller.cli import main
from controller.demo.command import DEFAULT_SCENARIO, SECOND_SCENARIO, running_fleet
from controller.demo.scenario_file import EPOCH, read
from controller.demo.scenario_run import SteppedClock
from controller.demo.servers import SPOKE_NAMESPACE, rollout
from tests.support import eventually

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]


class Demo:
    """The demo in a subprocess, its stdout collected line by line on a thread."""

    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "demo", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.lines: list[str] = []
        self.errors: list[str] = []
        # One reader per pipe, and nothing else reads them (communicate() would race them).
        assert self.process.stdout is not None and self.process.stderr is not None
        self._readers = [
            threading.Thread(target=self.lines.extend, args=(self.process.stdout,), daemon=True),
            threading.Thread(target=self.errors.extend, args=(self.process.stderr,), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def said(self, text: str) -> bool:
        return any(text in line for line in list(self.lines))

    def hub_kubeconfig(self) -> Path:
        eventually(lambda: self.said("hub kubeconfig    "), timeout=60, what="the hub's kubeconfig")
        line = next(line for line in self.lines if "hub kubeconfig    " in line)
        return Path(line.split("hub kubeconfig", 1)[1].strip())

    def end(self) -> tuple[int, str, str]:
        self.process.send_signal(signal.SIGINT)
        self.process.wait(timeout=60)
        for reader in self._readers:
            reader.join(10)
        return self.process.returncode, "".join(self.lines), "".join(self.errors)


def test_fleet_of_three_reaches_one_hub_that_fleet_lists_live(
    capsys: pytest.CaptureFixture[str],
) -> None:
    demo = Demo("--clusters", "3", "--time-scale", "100", "--duration", "120")
    try:
        kubeconfig = demo.hub_kubeconfig()
        for cluster in ("cluster1", "cluster2", "cluster3"):
            eventually(lambda c=cluster: demo.said(f"] {c} hub     "), timeout=60,  # type: ignore[misc]
                       what=f"{cluster}'s hub copy")  # fmt: skip
        assert main(["fleet", "--kubeconfig", str(kubeconfig), "--format", "json"]) == 0
        document = json.loads(capsys.readouterr().out)
    finally:
        code, out, err = demo.end()
    assert code == 0, err
    assert "Traceback" not in err
    assert [c["cluster"] for c in document["clusters"]] == ["cluster1", "cluster2", "cluster3"]
    assert "Unknown" not in document["summary"]["states"]
    assert "fleet   3 clusters: " in out
    # beside the demo, `fleet` agrees with it: the story runs in the present, on the hub's
    # clock, so every cluster changed state within the last hour (its own line says so)
    assert document["summary"]["changedLastHour"] == 3, document
    assert "3 changed state in the last hour" in out


def test_fleet_plays_every_story_to_the_end_and_checks_it() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", "demo", "--clusters", "3", "--time-scale", "400"],
        cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "39 checked steps: every expectation held." in out  # 16 + 7 + 16
    # The second cluster's own outage: the platform collector, Degraded at 18m of its timeline,
    # which started 10 s after the first's (its expectations held). A line is stamped with the
    # fleet's clock when it is printed, which another spoke may have moved on meanwhile: it is
    # never earlier.
    [outage] = [_stamp(line) for line in out.splitlines()
                if "] cluster2 hub     Degraded (ForwardFailure)" in line]  # fmt: skip
    assert outage >= 18 * 60 + 10, outage
    # The first and third play the story; the third's window ends 20 s after the first's.
    assert "pending: the dampening window ends at 15m20s" in out
    assert out.rstrip().endswith("cluster3 hub:   Available (ForwardSuccessful)")
    stamps = re.findall(r"^\[\s*(\d+)m(\d+)s\]", out, flags=re.MULTILINE)
    seconds = [int(minutes) * 60 + int(rest) for minutes, rest in stamps]
    assert seconds == sorted(seconds), "a line's time went back"
    played = out.split("\n\n")[-2].splitlines()  # the play, before its counts
    assert "fleet   3 clusters: 3 Available;" in played[-1], played[-1]
    # each fleet line says something new: the same one is never printed twice in a row
    fleet = [line.split("] ", 1)[1] for line in played if "] fleet   " in line]
    assert all(a != b for a, b in itertools.pairwise(fleet)), fleet
    # The epilogue: cluster1's agent stops and cluster2 is lost, and OCM says so as OCM does;
    # once it held for the window, the hub side's Degraded makes the console say the agent is
    # down, and the fleet line counts the lost cluster (docs/spec.md §12.2); then both come
    # back, and the console shows every cluster available again.
    assert "] cluster1 console Degraded: the addon's agent is not running on cluster cluster1" \
           in out  # fmt: skip
    assert "1 AgentUnavailable;" in out and "1 ClusterLost;" in out
    assert "] cluster1 agent   stops: its Deployment addon-status-controller has no ready " \
           "replica" in out  # fmt: skip
    assert "] cluster1 ocm     Available=False (ProbeUnavailable: Probe addon unavailable with " \
           "err readyReplica is not probed); cluster Available=True" in out  # fmt: skip
    assert "] cluster2 cluster lost: its klusterlet stops renewing" in out
    lost = "Registration agent stopped updating its lease."
    assert f"] cluster2 ocm     Available=Unknown (ManagedClusterLeaseUpdateStopped: {lost}); " \
           "cluster Available=Unknown" in out  # fmt: skip
    assert f"] cluster2 console Unknown: {lost}" in out
    assert "] cluster1 ocm     Available=True (ProbeAvailable); cluster Available=True" in out
    assert "] cluster2 ocm     Available=True (ProbeAvailable); cluster Available=True" in out
    healthy = "console: cluster1 Available, cluster2 Available, cluster3 Available"
    assert played[-1].endswith(healthy), played[-1]


def _stamp(line: str) -> int:
    """A line's `[ 18m10s]` in seconds."""
    minutes, seconds = re.findall(r"^\[\s*(\d+)m(\d+)s\]", line)[0]
    return int(minutes) * 60 + int(seconds)


def test_second_cluster_s_story_holds_as_a_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(SECOND_SCENARIO)]) == 0, capsys.readouterr().err


def test_clusters_must_be_at_least_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--clusters", "0"]) == 2
    assert capsys.readouterr().err == "addon-status demo: --clusters must be at least 1\n"


def test_each_spoke_is_installed_from_the_template_and_writes_as_its_registration_identity() -> (
    None
):
    """The demo's fleet is rolled out as manifests/ocm rolls one out: each spoke holds the seed
    AddOnTemplate's manifests rendered for its cluster, and its controller writes the hub (which
    authorizes with RBAC) as the identity the addon framework registers, with only the
    permission `hubPermissions` binds in its own namespace: no call denied, no shared token."""
    scenario = read(DEFAULT_SCENARIO)
    clocks = [SteppedClock(EPOCH), SteppedClock(EPOCH)]
    with running_fleet([(scenario, clock) for clock in clocks]) as fleet:
        shares = rollout(["cluster1", "cluster2"])
        for demo in fleet.spokes:
            deployment = demo.spoke.get_object(
                "apps", "v1", "deployments", SPOKE_NAMESPACE, "addon-status-controller"
            )
            assert deployment is not None, "the rendered agent is on the spoke"
            demo.system.report(reason="UpdateSuccessful", message="deployed")
        for demo in fleet.spokes:
            eventually(lambda d=demo: fleet.hub.get_object(  # type: ignore[misc]
                "observability.open-cluster-management.io", "v1beta1", "observabilityaddons",
                d.cluster, "observability-addon"), what=f"{demo.cluster}'s hub copy")  # fmt: skip
        audit = fleet.hub.audit
    assert [r for r in audit if r.code == 403] == []
    for cluster, share in shares.items():
        writes = {(r.verb, r.namespace) for r in audit if r.user == share.identity.user}
        assert ("create", cluster) in writes and ("update", cluster) in writes
        assert {namespace for _, namespace in writes} == {cluster}
