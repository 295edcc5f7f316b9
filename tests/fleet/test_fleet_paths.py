"""`addon-status fleet` tells the same truth as the hub side (docs/spec.md §12.2): a cluster whose
agent is down, that is lost, whose agent is not registered or whose status never reached the
hub is in that state, its own, rather than in its copy's stale one; `fleet CLUSTER` shows OCM's
conditions beside the copy's. Against kubesim serving OCM's upstream CRDs, OCM's conditions
written as OCM v1.3 writes them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.kube.kubeconfig import kubeconfig_yaml
from statemachines.conditions import format_time
from tests.hub.hubside import Hub, cond, hub_server, seed

pytestmark = pytest.mark.integration

AGO = format_time(datetime.now(UTC) - timedelta(hours=1))
LEASE = "Registration agent stopped updating its lease."


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[tuple[Hub, Path]]:
    with hub_server() as hub:
        for cluster in ("ok", "down", "lost", "unregistered", "silent"):
            hub.cluster(cluster)
            hub.set_copy(cluster, seed("Available", "ForwardSuccessful", "metrics sent"))
        hub.delete_copy("silent")
        up = cond("Available", "True", "ProbeAvailable", "", at=AGO)
        deployed = cond("ManifestApplied", "True", "AddonManifestApplied", "", at=AGO)
        hub.set_addon_conditions("ok", [up, deployed])
        hub.set_addon_conditions("down", [cond("Available", "False", "ProbeUnavailable",
                                               "no ready replica", at=AGO)])  # fmt: skip
        hub.set_addon_conditions("lost", [cond("Available", "Unknown", "LeaseStopped", LEASE,
                                               at=AGO)])  # fmt: skip
        refused = cond("RegistrationApplied", "False", "SetPermissionFailed", "forbidden", at=AGO)
        hub.set_addon_conditions("unregistered", [up, refused])
        hub.set_addon_conditions("silent", [up, deployed])
        hub.server.put_object("cluster.open-cluster-management.io", "v1", "managedclusters", {
            "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
            "metadata": {"name": "lost"}, "spec": {},
            "status": {"conditions": [{"type": "ManagedClusterConditionAvailable",
                                       "status": "Unknown", "reason": "LeaseStopped",
                                       "message": LEASE, "lastTransitionTime": AGO}]},
        })  # fmt: skip
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.server.url, token="admin"), "utf-8")
        yield hub, kubeconfig


def fleet_json(kubeconfig: Path, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    assert main(["fleet", "--kubeconfig", str(kubeconfig), "-o", "json", *args]) == 0
    return json.loads(capsys.readouterr().out)


def test_each_broken_path_is_a_state_of_its_own(
    fleet: tuple[Hub, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, kubeconfig = fleet
    shown = fleet_json(kubeconfig, capsys)
    states = {row["cluster"]: row["state"] for row in shown["clusters"]}
    assert states == {
        "ok": "Available", "down": "AgentUnavailable", "lost": "ClusterLost",
        "unregistered": "AgentNotRegistered", "silent": "StatusNotReplicated",
    }  # fmt: skip
    down = next(row for row in shown["clusters"] if row["cluster"] == "down")
    assert (
        "no ready replica" in down["message"] and "Available (ForwardSuccessful)" in down["message"]
    )
    only = fleet_json(kubeconfig, capsys, "--state", "agentunavailable")
    assert [row["cluster"] for row in only["clusters"]] == ["down"]


def test_the_hub_sides_own_verdict_on_the_addon_is_the_state(
    fleet: tuple[Hub, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """What only the hub side can know (a SubjectAccessReview refused the agent) is read from
    the `Degraded` it wrote."""
    hub, kubeconfig = fleet
    verdict = cond("Degraded", "True", "StatusNotReplicated", "may not update its copy", at=AGO)
    hub.set_addon_conditions("ok", [*hub.conditions("ok"), verdict])
    shown = fleet_json(kubeconfig, capsys, "--cluster", "ok")
    assert [(r["state"], r["message"]) for r in shown["clusters"]] == [
        ("StatusNotReplicated", "may not update its copy")
    ]


def test_one_cluster_shows_ocms_conditions_beside_the_copys(
    fleet: tuple[Hub, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, kubeconfig = fleet
    assert main(["fleet", "--kubeconfig", str(kubeconfig), "lost"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("Cluster:   lost\nState:     ClusterLost (ClusterLost)\n")
    ocm = text.split("OCM:\n")[1].split("\n\n")[0]
    assert "ManagedCluster" in ocm and "ManagedClusterConditionAvailable  Unknown" in ocm
    assert "ManagedClusterAddOn addon-status  Available" in ocm
    document = fleet_json(kubeconfig, capsys, "silent")
    assert document["state"] == "StatusNotReplicated" and document["conditions"] == []
    assert {c["type"] for c in document["ocm"]} == {"Available", "ManifestApplied"}


def test_the_summary_counts_each_broken_paths_state(
    fleet: tuple[Hub, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, kubeconfig = fleet
    states = fleet_json(kubeconfig, capsys)["summary"]["states"]
    assert states == {"Available": 1, "AgentNotRegistered": 1, "AgentUnavailable": 1,
                      "ClusterLost": 1, "StatusNotReplicated": 1}  # fmt: skip


def test_a_path_the_hub_side_judged_whole_is_the_copys_state_as_on_the_console(
    fleet: tuple[Hub, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The hub side wrote the copy's Degraded beside OCM's RegistrationApplied=False (an agent
    whose older binding still lets it write): the console shows the copy's truth, so does the
    row."""
    hub, kubeconfig = fleet
    copys = cond("Degraded", "False", "ForwardSuccessful", "metrics sent")
    hub.set_addon_conditions("unregistered", [*hub.conditions("unregistered"), copys])
    shown = fleet_json(kubeconfig, capsys, "--cluster", "unregistered")
    assert [row["state"] for row in shown["clusters"]] == ["Available"]
