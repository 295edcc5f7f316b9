"""The demo's hub is a whole Open Cluster Management hub (controller/demo/ocm_hub.py): on a
`demo --clusters N` hub, the operator's own tools work as on a real one — `addon-status check hub`
passes, each part broken on purpose is one ✘ naming it, `addon-status fleet -l` selects by the
ManagedClusters' labels, and `kubectl get managedclusters` shows each cluster joined and
available, as OCM's klusterlet says it."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial

import pytest

from controller.cli import main
from controller.demo.command import DEFAULT_SCENARIO, running_fleet
from controller.demo.fleet import Fleet
from controller.demo.ocm_hub import HUB_SIDE, HUB_SIDE_NAMESPACE
from controller.demo.scenario_file import EPOCH, read
from controller.demo.scenario_run import SteppedClock
from controller.hub.lease_notes import LAST_RESYNC
from kubesim import APIServer
from tests.support import KUBECTL, eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RBAC = "rbac.authorization.k8s.io"
COPIES = ("observability.open-cluster-management.io", "v1beta1", "observabilityaddons")


@contextmanager
def _fleet(clusters: int) -> Iterator[Fleet]:
    """The demo's fleet of `clusters` (`demo --clusters N`'s servers), each agent having
    written its hub copy once (its first report)."""
    scenario = read(DEFAULT_SCENARIO)
    with running_fleet([(scenario, SteppedClock(EPOCH)) for _ in range(clusters)]) as fleet:
        for demo in fleet.spokes:
            demo.system.report(reason="UpdateSuccessful", message="deployed")
        for demo in fleet.spokes:
            eventually(lambda d=demo: fleet.hub.get_object(*COPIES, d.cluster,  # type: ignore[misc]
                       "observability-addon"), what=f"{demo.cluster}'s hub copy")  # fmt: skip
        yield fleet


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    with _fleet(2) as made:
        yield made


def _check_hub(fleet: Fleet, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    def noted() -> bool:  # the leader notes its first resync at the renewal after it
        lease = fleet.hub.get_object("coordination.k8s.io", "v1", "leases", HUB_SIDE_NAMESPACE,
                                     HUB_SIDE) or {}  # fmt: skip
        return LAST_RESYNC in ((lease.get("metadata") or {}).get("annotations") or {})

    eventually(noted, "the hub side's resync on its Lease")
    capsys.readouterr()
    code = main(["check", "hub", "--kubeconfig", str(fleet.kubeconfig)])
    return code, capsys.readouterr().out


def _failed(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("✘")]


def test_check_hub_passes_on_the_demo_s_hub(
    fleet: Fleet, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = _check_hub(fleet, capsys)
    assert (code, _failed(out)) == (0, []), out
    assert "✔ Open Cluster Management's kinds and the hub copies' are served (8)" in out
    assert "✔ the addon manager may bind the agents' hub roles" in out
    assert "✔ the admission policy addon-status-agent-isolation is in force (Deny)" in out
    assert "✔ Placement addon-status/addon-status chose 2 clusters" in out
    assert "✔ 2 of 2 clusters: registered, manifests applied, the hub copy kept by a running " \
           "agent" in out  # fmt: skip
    assert "✔ the hub side runs: 1 of 1 replicas ready" in out  # the demo's, in its process


def _delete(group: str, plural: str, name: str, namespace: str = "") -> Callable[[Fleet], None]:
    def breaks(fleet: Fleet) -> None:
        assert fleet.hub.delete_object(group, "v1", plural, namespace, name), name

    return breaks


def _unregister(cluster: str) -> Callable[[Fleet], None]:
    """The bind grant gone, and then the agent's hub RoleBinding deleted: the addon manager may
    not make it again (OCM says so on the MCA)."""

    def breaks(fleet: Fleet) -> None:
        _delete(RBAC, "clusterrolebindings", "addon-status:addon-manager")(fleet)
        _delete(RBAC, "rolebindings", "open-cluster-management:addon-status:clusterrole:agent",
                cluster)(fleet)  # fmt: skip
        eventually(lambda: _registration(fleet.hub, cluster) == "False", "refused registration")

    return breaks


def _registration(hub: APIServer, cluster: str) -> str:
    mca = hub.get_object("addon.open-cluster-management.io", "v1alpha1", "managedclusteraddons",
                         cluster, "addon-status") or {}  # fmt: skip
    for condition in (mca.get("status") or {}).get("conditions") or []:
        if condition["type"] == "RegistrationApplied":
            return str(condition["status"])
    return ""


@pytest.mark.parametrize(
    ("breaks", "failures"),
    [
        (_delete("admissionregistration.k8s.io", "validatingadmissionpolicybindings",
                 "addon-status-agent-isolation"),
         ["✘ the admission policy addon-status-agent-isolation has no binding that denies"]),
        (_delete(RBAC, "clusterrolebindings", "addon-status:addon-manager"),
         ["✘ the addon manager may not bind ClusterRole addon-status-hub, "
          "addon-status-hub-create-missing: every agent's hub RoleBinding would be refused"]),
        (_unregister("cluster2"),
         ["✘ the addon manager may not bind ClusterRole ",
          "✘ RegistrationApplied is False: Failed to set permission for hub agent: ",
          "✘ system:open-cluster-management:cluster:cluster2:addon:addon-status:agent:"
          "addon-status-agent may not update observabilityaddons/status"]),
    ],
    ids=["admission-policy-binding", "bind-grant", "agent-role-binding"],
)  # fmt: skip
def test_a_part_of_the_demo_s_hub_broken_on_purpose_is_a_cross_in_check_hub(
    fleet: Fleet,
    capsys: pytest.CaptureFixture[str],
    breaks: Callable[[Fleet], None],
    failures: list[str],
) -> None:
    breaks(fleet)
    code, out = _check_hub(fleet, capsys)
    assert code == 1, out
    found = _failed(out)
    assert len(found) == len(failures), out
    for line, failure in zip(found, failures, strict=True):
        assert line.startswith(failure), out


def test_fleet_selects_clusters_by_their_managed_cluster_labels(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with _fleet(3) as fleet:
        listed = partial(_listed, fleet, capsys)
        assert listed("env=prod") == ["cluster1", "cluster3"]
        assert listed("env=staging") == ["cluster2"]
        assert listed("region=us-east-1") == ["cluster2"]
        assert listed("env=prod,region=ap-south-1") == ["cluster3"]
        assert listed("cluster.open-cluster-management.io/clusterset=default") == [
            "cluster1", "cluster2", "cluster3"]  # fmt: skip


def _listed(fleet: Fleet, capsys: pytest.CaptureFixture[str], selector: str) -> list[str]:
    """The clusters `addon-status fleet -l selector` lists."""
    capsys.readouterr()
    args = ["fleet", "--kubeconfig", str(fleet.kubeconfig), "--format", "json"]
    assert main([*args, "-l", selector]) == 0
    return [c["cluster"] for c in json.loads(capsys.readouterr().out)["clusters"]]


def test_kubectl_shows_each_managed_cluster_joined_and_available(fleet: Fleet) -> None:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(fleet.kubeconfig), "get", "managedclusters"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    header, *rows = [line.split() for line in done.stdout.splitlines()]
    assert header[:5] == ["NAME", "HUB", "ACCEPTED", "JOINED", "AVAILABLE"], header
    assert [row[:4] for row in rows] == [
        ["cluster1", "true", "True", "True"], ["cluster2", "true", "True", "True"]]  # fmt: skip
