"""`addon-status check` in the rollout's world (world.py), RBAC and admission on as on a real hub:
on the hub as its admin, and on each spoke as the controller runs there (its rendered flags, its
service account, its hub identity). Where everything holds, every line is ✔ and the exit code 0;
each failure made on purpose — the addon manager's `bind` grant removed, the admission policy
unbound, a Placement that chose nothing, a cluster whose manifests were not applied or whose
agent went silent, a missing copy, a controller without its Role or its hub permission — is one
✘ line naming it and what to do, and exit code 1. OCM's controllers are played as they write:
the placement controller's PlacementDecision, the addon manager's and the health check's
conditions on each ManagedClusterAddOn."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from controller.check.findings import Finding
from controller.check.hub_side import DEPLOYMENT
from controller.check.spoke import spoke_findings
from controller.cli import main
from controller.hub.app import HubReplica
from controller.hub.lease_notes import LAST_RESYNC
from controller.hub.mirror import managed_cluster_addon
from controller.hub.ocm import MANAGED_CLUSTER_ADDON
from controller.kube.api import ADDON, ApiResource, Kube, NotFoundError, whole
from controller.kube.connection import Connection
from controller.kube.kubeconfig import Kubeconfig, client_for, kubeconfig_yaml
from kubesim import APIServer
from tests.hub.hubside import cond
from tests.ocm.world import ADDON_NAMESPACE, CLUSTERS, COPIES, COPY, Spoke
from tests.support import apply_objects, connection, eventually, kube_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
RBAC = "rbac.authorization.k8s.io/v1"
DECISIONS = ApiResource(
    "cluster.open-cluster-management.io", "v1beta1", "placementdecisions", "PlacementDecision"
)
NOW = "2026-11-27T00:00:00Z"
WENT_WELL = ("RegistrationApplied", "ManifestApplied", "Available")  # OCM's, on each cluster


def _condition(type_: str, status: str = "True", reason: str = "Done", message: str = "") -> Any:
    """A condition as OCM's controllers write it, at NOW (hubside's `cond`)."""
    return cond(type_, status, reason, message, at=NOW)


def _as_ocm(
    admin: Kube,
    clusters: tuple[str, ...] = CLUSTERS,
    *,
    kind: ApiResource = ADDON,
    name: str = COPY,
) -> None:
    """What OCM's controllers write once the rollout went well: the placement controller's
    decision, each ManagedClusterAddOn registered, applied and available, and (as the agents
    would) each hub copy's conditions."""
    apply_objects(admin, [{
        "apiVersion": DECISIONS.api_version, "kind": DECISIONS.kind,
        "metadata": {"name": "addon-status-decision-1", "namespace": "addon-status",
                     "labels": {"cluster.open-cluster-management.io/placement": "addon-status"}},
    }])  # fmt: skip
    decisions = [{"clusterName": c, "reason": ""} for c in clusters]
    admin.patch_status(DECISIONS, "addon-status", "addon-status-decision-1",
                       {"status": {"decisions": decisions}})  # fmt: skip
    copies = admin.discover(kind.api_version, kind.kind)
    for cluster in clusters:
        try:  # acm: the world made observability-controller's; the addon manager makes this one
            admin.get(MANAGED_CLUSTER_ADDON, cluster, "addon-status")
        except NotFoundError:
            admin.create(MANAGED_CLUSTER_ADDON, cluster, managed_cluster_addon(cluster))
        conditions = [_condition(t) for t in WENT_WELL]
        admin.patch_status(MANAGED_CLUSTER_ADDON, cluster, "addon-status",
                           {"status": {"conditions": conditions}})  # fmt: skip
        try:
            admin.get(copies, cluster, name)
        except NotFoundError:  # seed, beside: the agent creates it (acm: the operator did)
            body = {"apiVersion": kind.api_version, "kind": kind.kind,
                    "metadata": {"name": name, "namespace": cluster}}  # fmt: skip
            admin.create(copies, cluster, body)
        admin.patch_status(copies, cluster, name,
                           {"status": {"conditions": [_condition("Available")]}})  # fmt: skip


def _check_hub(
    hub: APIServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], *flags: str
) -> tuple[int, str]:
    kubeconfig = tmp_path / "admin-kubeconfig"
    kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token="admin"), encoding="utf-8")
    capsys.readouterr()
    code = main(["check", "hub", "--kubeconfig", str(kubeconfig), *flags])
    return code, capsys.readouterr().out


HUB_SIDE_NAMESPACE, HUB_SIDE_NAME = "addon-status", "addon-status-hub-controller"  # the rollout's
LEASES = ("coordination.k8s.io", "v1", "leases")


def _lease(hub: APIServer) -> Any:
    return hub.get_object(*LEASES, HUB_SIDE_NAMESPACE, HUB_SIDE_NAME)


def _running(hub: APIServer, replica: HubReplica) -> None:
    """The hub side's pods ready, as the kubelet would report them (kubesim runs no pods), and
    its leader's first resync on the Lease it holds."""
    ready = {"replicas": 2, "readyReplicas": 2, "availableReplicas": 2}
    kube_of(hub, "admin").patch_status(DEPLOYMENT, HUB_SIDE_NAMESPACE, HUB_SIDE_NAME,
                                       {"status": ready})  # fmt: skip
    eventually(
        lambda: (
            LAST_RESYNC in (((_lease(hub) or {}).get("metadata") or {}).get("annotations") or {})
        ),
        "the leader's resync noted",
    )


def _failed(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("✘")]


def test_the_hub_check_passes_where_the_rollout_went_well(
    hub: APIServer, hub_side: HubReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _as_ocm(kube_of(hub, "admin"))
    _running(hub, hub_side)
    code, out = _check_hub(hub, tmp_path, capsys)
    assert (code, _failed(out)) == (0, []), out
    assert "✔ the addon manager may bind the agents' hub roles" in out
    assert "✔ the admission policy addon-status-agent-isolation is in force (Deny)" in out
    assert "✔ Placement addon-status/addon-status chose 2 clusters" in out
    # every cluster holds: one line for them all, none of theirs in full
    assert "✔ 2 of 2 clusters: registered, manifests applied, the hub copy kept by a running " \
           "agent" in out  # fmt: skip
    assert "► cluster " not in out
    assert "✔ the hub side runs: 2 of 2 replicas ready" in out
    assert f"✔ {hub_side.identity} leads (Lease renewed " in out
    assert "✔ the leader resynced every cluster " in out


def _delete(resource: str, namespace: str = "", name: str = "") -> Callable[[APIServer], None]:
    """Deletes the object of `resource` ("group/version/plural"), as an admin would."""

    def breaks(server: APIServer) -> None:
        group, version, plural = (
            resource.rsplit("/", 2) if resource.count("/") == 2 else ("", *resource.split("/"))
        )
        assert server.delete_object(group, version, plural, namespace, name), resource

    return breaks


def _mca_condition(cluster: str, *conditions: Any) -> Callable[[APIServer], None]:
    def breaks(server: APIServer) -> None:
        admin = kube_of(server, "admin")
        kept = [_condition(t) for t in WENT_WELL]
        changed = {c["type"]: c for c in [*kept, *conditions]}
        admin.patch_status(MANAGED_CLUSTER_ADDON, cluster, "addon-status",
                           {"status": {"conditions": list(changed.values())}})  # fmt: skip

    return breaks


def _untolerated(server: APIServer) -> None:
    """The Placement as the rollout shipped it before it tolerated lost clusters."""
    placement = server.get_object("cluster.open-cluster-management.io", "v1beta1", "placements",
                                  "addon-status", "addon-status")  # fmt: skip
    assert placement is not None
    placement["spec"]["tolerations"] = placement["spec"]["tolerations"][1:]
    server.put_object("cluster.open-cluster-management.io", "v1beta1", "placements", placement)


def _unbound(cluster: str) -> Callable[[APIServer], None]:
    """Every RoleBinding of `cluster`'s namespace gone (the addon manager would make the
    agent's again; here nothing does): the agent's writes are refused."""

    def breaks(server: APIServer) -> None:
        admin = kube_of(server, "admin")
        bindings = admin.discover("rbac.authorization.k8s.io/v1", "RoleBinding")
        for binding in admin.list(bindings, cluster, keep=whole).items:
            rbac = ("rbac.authorization.k8s.io", "v1", "rolebindings")
            assert server.delete_object(*rbac, cluster, binding["metadata"]["name"])

    return breaks


def _not_ready(server: APIServer) -> None:
    kube_of(server, "admin").patch_status(DEPLOYMENT, HUB_SIDE_NAMESPACE, HUB_SIDE_NAME,
                                          {"status": {"readyReplicas": 0}})  # fmt: skip


def _stuck(server: APIServer) -> None:
    """A worker stuck for an hour (the test sets the replica's last resync back): its leader
    keeps renewing the Lease with the notes of that resync."""


@pytest.mark.parametrize(
    ("breaks", "failure"),
    [
        (_delete("rbac.authorization.k8s.io/v1/clusterrolebindings",
                 name="addon-status:addon-manager"),
         "✘ the addon manager may not bind ClusterRole addon-status-hub, "
         "addon-status-hub-create-missing: every agent's hub RoleBinding would be refused"),
        (_delete("admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
                 name="addon-status-agent-isolation"),
         "✘ the admission policy addon-status-agent-isolation has no binding that denies"),
        (_delete("cluster.open-cluster-management.io/v1beta1/placementdecisions", "addon-status",
                 "addon-status-decision-1"),
         "✘ Placement addon-status/addon-status chose no cluster: bind a ManagedClusterSet"),
        (_mca_condition("cluster2", _condition(
            "ManifestApplied", "False", "ManifestWorkApplyFailed",
            "the CRD already exists, owned by someone else")),
         "✘ ManifestApplied is False: the CRD already exists, owned by someone else"),
        (_mca_condition("cluster1", _condition("Available", "Unknown", "NoProbeResult")),
         f"✘ the hub copy cluster1/{COPY} may be stale: the agent is not available "
         f"(ManagedClusterAddOn Available=Unknown since {NOW})"),
        (_delete("observability.open-cluster-management.io/v1beta1/observabilityaddons",
                 "cluster2", COPY),
         f"✘ the hub copy cluster2/{COPY} does not exist"),
        (_untolerated,
         "✘ Placement addon-status/addon-status does not tolerate "
         "cluster.open-cluster-management.io/unreachable: a lost cluster would leave it"),
        (_unbound("cluster2"),
         "✘ system:open-cluster-management:cluster:cluster2:addon:addon-status:agent:"
         "addon-status-agent may not update observabilityaddons/status"),
        (_delete("rbac.authorization.k8s.io/v1/rolebindings", "cluster1",
                 "open-cluster-management:addon-status:clusterrole:agent"),
         "✘ system:open-cluster-management:cluster:cluster1:addon:addon-status:agent:"
         "addon-status-agent may not update observabilityaddons/status observability-addon in "
         "cluster1: RoleBinding cluster1/open-cluster-management:"
         "addon-status:clusterrole:agent is missing: the addon manager makes it again"),
        (_not_ready,
         "✘ the hub side has no ready replica (of 2): kubectl -n addon-status describe "
         "deployment addon-status-hub-controller"),
        (_stuck,
         "✘ the leader last resynced 60m ago (every 300s): its worker is stuck"),
    ],
    ids=["bind-grant", "admission-policy", "placement", "manifests", "silent-agent", "copy",
         "lost-clusters-dropped", "agent-unbound", "agent-binding-deleted", "hub-side-not-ready",
         "hub-side-stuck"],
)  # fmt: skip
def test_each_broken_part_of_the_rollout_is_one_line_saying_what_to_do(
    hub: APIServer,
    hub_side: HubReplica,
    *,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    breaks: Callable[[APIServer], None],
    failure: str,
) -> None:
    _as_ocm(kube_of(hub, "admin"))
    _running(hub, hub_side)
    if breaks is _stuck:
        hub_side.side.loop.stop(5.0)
        hub_side.side.resynced = dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)
        eventually(
            lambda: (
                _lease(hub)["metadata"]["annotations"][LAST_RESYNC]
                < dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H")
            ),
            "the old resync noted",
        )
    breaks(hub)
    code, out = _check_hub(hub, tmp_path, capsys)
    assert code == 1
    [line] = _failed(out)
    assert line.startswith(failure), out
    if "cluster" in failure and "Placement" not in failure:  # that cluster shown in full
        assert "✔ 1 of 2 clusters: " in out, out


def _spoke_check(spoke: Spoke, hub: APIServer) -> list[Finding | str]:
    """`check spoke` as the controller's pod runs it: its options, its service account on the
    spoke, its mounted hub kubeconfig; the report API where the replica listens."""
    port = urlsplit(spoke.replica.report_url).port
    options = spoke.replica.options.model_copy(update={"report_address": f"127.0.0.1:{port}"})

    def connect(kubeconfig: Kubeconfig | None) -> Connection:
        return client_for(kubeconfig) if kubeconfig else connection(spoke.server, "controller")

    return list(spoke_findings(options, connect, dt.datetime.now(dt.UTC)))


def _lines(findings: list[Finding | str]) -> list[str]:
    return [f"{'✔' if f.ok else '✘'} {f.what}" for f in findings if isinstance(f, Finding)]


def test_the_spoke_check_passes_in_each_running_agent_and_names_what_breaks(
    flavour: str, hub: APIServer, spokes: list[Spoke]
) -> None:
    for spoke in spokes:
        findings = _spoke_check(spoke, hub)
        assert [f for f in findings if isinstance(f, Finding) and not f.ok] == [], findings
        lines = _lines(findings)
        assert any(line.startswith("✔ may do all ") for line in lines), lines
        assert any("the report API on 127.0.0.1:" in line for line in lines), lines
        assert "✔ may write the copy's status on the hub" in lines, lines
    spoke = spokes[0]
    # the controller's Role unbound on the spoke, its hub permission unbound on the hub
    rbac = ("rbac.authorization.k8s.io", "v1", "rolebindings")
    assert spoke.server.delete_object(*rbac, ADDON_NAMESPACE, "addon-status-controller")
    hub_admin = kube_of(hub, "admin")
    bindings = hub_admin.discover(RBAC, "RoleBinding")
    for binding in hub_admin.list(bindings, spoke.cluster, keep=whole).items:
        assert hub.delete_object(*rbac, spoke.cluster, binding["metadata"]["name"])
    failed = [line for line in _lines(_spoke_check(spoke, hub)) if line.startswith("✘")]
    assert f"✘ may not update observabilityaddons/status.{ADDON.group} observability-addon in " \
           f"{ADDON_NAMESPACE}" in failed, failed  # fmt: skip
    assert f"✘ may not update observabilityaddons/status.{ADDON.group} {COPY} in " \
           f"{spoke.cluster} on the hub" in failed, failed  # fmt: skip
    # the hint names the ClusterRole the rollout's hubPermissions binds in this flavour
    template = (ROOT / "manifests" / "ocm" / ("acm/" if flavour == "acm" else "")
                / "addontemplate.yaml").read_text()  # fmt: skip
    bound = re.search(r"clusterRoleName: (\S+)", template)
    assert bound, template
    hints = [h for f in _spoke_check(spoke, hub) if isinstance(f, Finding) and not f.ok
             for h in [f.fix] if "on the hub" in f.what]  # fmt: skip
    assert hints and all(f"bind ClusterRole {bound[1]} " in h for h in hints), hints


def test_the_hub_check_says_when_the_hub_side_stopped_or_is_not_installed(
    hub: APIServer, hub_side: HubReplica, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _as_ocm(kube_of(hub, "admin"))
    _running(hub, hub_side)
    hub_side.stop()  # both replicas gone: the last leader released the Lease
    code, out = _check_hub(hub, tmp_path, capsys)
    assert (code, _failed(out)) == (1, [
        "✘ no replica holds the hub side's Lease addon-status/addon-status-hub-controller "
        "(released): nothing writes the ManagedClusterAddOns: kubectl -n addon-status get pods "
        "-l app.kubernetes.io/name=addon-status-hub-controller; their logs"]), out  # fmt: skip
    assert hub.delete_object("apps", "v1", "deployments", HUB_SIDE_NAMESPACE, HUB_SIDE_NAME)
    code, out = _check_hub(hub, tmp_path, capsys)
    assert (code, _failed(out)) == (1, [
        "✘ the hub side is not installed: no Deployment labelled "
        "app.kubernetes.io/name=addon-status-hub-controller: kubectl apply -k manifests/ocm "
        "(manifests/ocm/acm on ACM)"]), out  # fmt: skip


@pytest.mark.parametrize("flavour", ["beside"])
def test_the_hub_check_of_the_beside_rollout_reads_its_own_kind(
    flavour: str,
    hub: APIServer,
    hub_side: HubReplica,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Beside ACM's observability operator (`check hub --addon-kind AddonStatus`): all ✔ where
    the rollout went well, and an agent whose hub binding is gone named with the project's kind."""
    kind, name = COPIES[flavour]
    _as_ocm(kube_of(hub, "admin"), kind=kind, name=name)
    _running(hub, hub_side)
    code, out = _check_hub(hub, tmp_path, capsys, "--addon-kind", kind.kind)
    assert (code, _failed(out)) == (0, []), out
    assert "✔ the addon manager may bind the agents' hub roles" in out
    assert "✔ 2 of 2 clusters: registered, manifests applied, the hub copy kept by a running " \
           "agent" in out  # fmt: skip
    assert hub.delete_object("rbac.authorization.k8s.io", "v1", "rolebindings", "cluster1",
                             "open-cluster-management:addon-status:clusterrole:agent")  # fmt: skip
    code, out = _check_hub(hub, tmp_path, capsys, "--addon-kind", kind.kind)
    [line] = _failed(out)
    assert f"may not update addonstatuses/status {name} in cluster1" in line, out
