"""The fleet rollout end to end, with authorization on everywhere (kubesim's RBAC, as
kube-apiserver's): `kubectl apply -k manifests/ocm` (or `manifests/ocm/acm`, or
`manifests/ocm/beside` after `manifests/hub/crd-own-kind`) on a hub that serves Open Cluster
Management's CRDs validates and applies as is; the AddOnTemplate, rendered for `cluster1` and
`cluster2` as the addon manager renders it (`controller.demo.addon_manager`), is applied to two
spokes as the work agent applies a ManifestWork, with the RoleBinding that `hubPermissions` creates
on the hub, created as OCM v1.3's addon manager creates it: as its own service account (whose
ClusterRole may write RoleBindings but not `bind`; the rollout grants `bind` on its roles, and
kubesim applies kube-apiserver's escalation check), binding the agent's user and both its groups;
each spoke's controller then runs from its rendered pod (args, settings, mounted ConfigMaps and
Secrets) as its service account on the spoke and as its registration identity on the hub (a token
mapped to that user and groups), and the hub side runs from its Deployment as its service account.

What must hold: not one call is denied on any server; each agent writes only its own cluster's
namespace on the hub, and `cluster2`'s identity, which RBAC now lets in through the group every
agent holds, is refused a write of `cluster1`'s copy by the rollout's admission policy; every
rule of the hub permission is used; the hub copies follow the spokes, the hub side mirrors both
clusters onto their ManagedClusterAddOns (the conditions it owns), and `fleet` lists both.
Beside ACM's observability operator, the same with the project's own kind: the template carries
each spoke's `AddonStatus`, the agents create their copies, the hub side writes the rollout's
own `addon-status` and not one object of MCO's is read or written on either side."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.cli import main
from controller.hub.app import HubReplica
from controller.hub.mirror import OWNED_TYPES, cluster_namespace
from controller.kube.api import ForbiddenError
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.reporter.client import ReportClient
from kubesim import APIServer
from tests.ocm.world import (
    ADDON_MANAGER,
    ADDON_MANAGER_RBAC,
    ADDON_NAMESPACE,
    ADMIN,
    CLUSTERS,
    COPIES,
    MANAGED_ADDON,
    OCM_CRDS,
    ROLLOUTS,
    UPSTREAM,
    Obj,
    Spoke,
    copy_status,
    not_crds,
    rendered_for,
    sorted_conditions,
)
from tests.support import MC, WAIT, apply_objects, eventually, kube_of

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.mark.parametrize("flavour", sorted(ROLLOUTS))  # beside too (world's fixture: MCO's kind)
def test_the_rollout_runs_every_cluster_with_least_privilege(  # noqa: PLR0917 (fixtures)
    flavour: str,
    rollout: list[Obj],
    hub: APIServer,
    spokes: list[Spoke],
    hub_side: HubReplica,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for spoke in spokes:
        url = spoke.replica.report_url
        with ReportClient(url, token="operator", ca_file=str(spoke.ca), deadline=WAIT) as operator:
            assert (
                operator.report(reason="UpdateSuccessful", message="deployed")["verdict"]
                == "accepted"
            )
        with ReportClient(
            url, token="collector", ca_file=str(spoke.ca), deadline=WAIT
        ) as collector:
            assert collector.report(MC, reason="ForwardSuccessful")["verdict"] == "accepted"
    for spoke in spokes:
        eventually(
            lambda s=spoke: (
                sorted_conditions(copy_status(hub, s.cluster, flavour))
                == sorted_conditions(copy_status(s.server, ADDON_NAMESPACE, flavour))
            ),
            f"{spoke.cluster}'s hub copy follows its spoke",
            timeout=3 * WAIT,
        )

    def mirrored(cluster: str) -> bool:
        found = hub.get_object("addon.open-cluster-management.io", "v1alpha1",
                               "managedclusteraddons", cluster, MANAGED_ADDON[flavour])  # fmt: skip
        found = found or {}
        types = {c["type"] for c in (found.get("status") or {}).get("conditions") or []}
        owned = {"Degraded"} if flavour == "acm" else set(OWNED_TYPES)
        return types == owned  # and never OCM's Available or Progressing

    for cluster in CLUSTERS:
        eventually(lambda c=cluster: mirrored(c), f"{cluster} mirrored", timeout=3 * WAIT)

    kubeconfig = tmp_path / "admin-kubeconfig"
    kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token="admin"), encoding="utf-8")
    capsys.readouterr()
    kind = ["--addon-kind", "AddonStatus"] if flavour == "beside" else []
    assert main(["fleet", "--kubeconfig", str(kubeconfig), *kind, "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["clusters"]
    assert {(r["cluster"], r["name"]) for r in rows} == {(c, COPIES[flavour][1]) for c in CLUSTERS}

    records = hub.audit  # every call so far, before the test's own probe below
    assert [r for r in records if r.code == 403] == []
    for spoke in spokes:
        assert [r for r in spoke.server.audit if r.code == 403] == [], spoke.cluster
    # each agent worked in its own namespace only, and used every rule of its hub permission
    wanted = {("get", ""), ("update", "status")} | (set() if flavour == "acm" else {("create", "")})
    for spoke in spokes:
        calls = [r for r in records if r.user == spoke.rendered.identity.user]
        assert {r.namespace for r in calls} == {spoke.cluster}
        assert {(r.verb, r.subresource) for r in calls} == wanted

    if flavour == "beside":  # MCO's objects, there on either side, neither read nor written
        for server in (hub, *(spoke.server for spoke in spokes)):
            theirs = [r for r in server.audit if r.user != ADMIN.username]
            assert [r for r in theirs if r.resource == "observabilityaddons"] == []
            assert [r for r in theirs if r.name == "observability-controller"] == []

    # cluster2's identity may read cluster1's copy (RBAC: the group every agent holds), but
    # the admission policy refuses it a write, whatever it writes
    intruder = kube_of(hub, "agent-cluster2")
    kind, name = COPIES[flavour]
    copies = intruder.discover(f"{kind.group}/{kind.version}", kind.kind)
    forged = intruder.get(copies, "cluster1", name)
    forged["status"] = {"conditions": [{
        "type": "Degraded", "status": "True", "reason": "Forged", "message": "",
        "lastTransitionTime": "2026-11-27T00:00:00Z"}]}  # fmt: skip
    with pytest.raises(ForbiddenError) as refused:
        intruder.replace_status(copies, "cluster1", name, forged)
    # the policy's words, not the authorizer's ("cannot update resource ...")
    assert "ValidatingAdmissionPolicy 'addon-status-agent-isolation'" in str(refused.value)


def test_without_the_rollouts_bind_grant_the_addon_manager_is_refused_the_binding(
    rollout: list[Obj],
) -> None:
    """What OCM v1.3 shows as `RegistrationApplied=False, SetPermissionFailed`: kube-apiserver's
    escalation check refuses the addon manager a RoleBinding to a role whose rules it does not
    hold, unless the rollout grants it `bind` on that role (manifests/ocm/common)."""
    without = [
        o for o in not_crds(rollout) if o["metadata"]["name"] != "addon-status:addon-manager"
    ]
    tokens = {"admin": ADMIN, "addon-manager": ADDON_MANAGER}
    crds = [*OCM_CRDS, UPSTREAM / "observabilityaddons.crd.yaml"]
    with APIServer(crds, tokens=tokens, rbac=True) as server:
        apply_objects(kube_of(server, "admin"), [*without, *ADDON_MANAGER_RBAC,
                                                 cluster_namespace("cluster1")])  # fmt: skip
        [binding] = rendered_for(rollout, "cluster1").hub
        with pytest.raises(ForbiddenError) as refused:
            apply_objects(kube_of(server, "addon-manager"), [binding])
    # the escalation check's words ("user ... is attempting to grant RBAC permissions not
    # currently held", cut by the seam), not the authorizer's ("User ... cannot create")
    assert '" is forbidden: user "system:serviceaccount:open-cluster-management-hub:' in str(
        refused.value
    )
