"""The hub-controller overlay's RBAC against what the hub side actually calls: two replicas,
built from the Deployment's own args and run as the overlay's service account against an
embedded hub, mirror a few clusters, fail over and meet a conflict; every call in the audit log
must be allowed by the rules bound to that account, and every privilege those rules grant must
have been used, with the ManagedClusterAddOn of the rollout (`addon-status`) and with ACM's
(`observability-controller`, the acm overlay). The namespaces' grant is what keeps a hub's own
namespaces out of the fleet, with or without `--namespace-selector`."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any, Final

import pytest

from controller.hub.app import HubReplica
from controller.hub.options import HubOptions, add_hub_flags
from controller.kube.backoff import Backoff
from kubesim import APIServer, RequestInfo, UserInfo
from tests.hub.hubside import CLUSTER_CRD, COPY_CRD, MCA_CRD, T1, Hub, cond, seed, standard
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.manifests.rbac import Grant, Request, ServiceAccount, grants_for, unauthorized, unused
from tests.support import IN_CLUSTER, connection, eventually

pytestmark = pytest.mark.integration

OVERLAY: Final = MANIFESTS / "hub-controller"
Obj = dict[str, Any]


def _settings(deployment: Obj) -> HubOptions:
    """What the Deployment's args say (POD_NAMESPACE, from the downward API, is its own)."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    parser = argparse.ArgumentParser()
    add_hub_flags(parser)
    args = parser.parse_args(container["args"][1:])
    assert container["args"][0] == "hub"
    return HubOptions.from_args(args, IN_CLUSTER).model_copy(
        update={
            "lease_namespace": deployment["metadata"]["namespace"],
            "lease_duration": timedelta(seconds=3),
            "renew_deadline": timedelta(seconds=2),
            "retry_period": timedelta(seconds=0.1),
        }
    )


def _addon_status(info: RequestInfo) -> bool:
    return info.resource == "managedclusteraddons" and info.subresource == "status"


def _run(
    selector: str, objects: list[Obj], addon: str = "addon-status"
) -> tuple[list[Request], list[Grant]]:
    deployment = find(objects, "Deployment", "addon-status-hub-controller")
    pod = deployment["spec"]["template"]["spec"]
    account = ServiceAccount(deployment["metadata"]["namespace"], pod["serviceAccountName"])
    settings = _settings(deployment).model_copy(update={"namespace_selector": selector})
    tokens = {
        "admin": UserInfo("admin", groups=("system:masters",)),
        "hub-side": UserInfo(account.username, groups=tuple(account.groups)),
    }
    namespaces = ("default", account.namespace)
    with APIServer(
        [COPY_CRD, MCA_CRD, CLUSTER_CRD], tokens=tokens, namespaces=namespaces
    ) as server:
        hub = Hub(server, addon)
        try:
            for cluster in ("cluster1", "cluster2"):
                hub.cluster(cluster, labels={"fleet": "prod"})
                hub.set_copy(cluster, seed())
                if addon != "addon-status":  # acm: the agent's own addon beside ACM's
                    Hub(server, "addon-status").create_addon(cluster)
            with (
                connection(server, "hub-side") as first_api,
                connection(server, "hub-side") as second_api,
            ):
                first = HubReplica(
                    settings,
                    first_api,
                    identity="a",
                    serve=False,
                    backoff=Backoff(0.02, 0.2),
                    watch_seconds=30,
                )
                second = HubReplica(
                    settings,
                    second_api,
                    identity="b",
                    serve=False,
                    backoff=Backoff(0.02, 0.2),
                    watch_seconds=30,
                )
                first.start()
                second.start()
                try:
                    eventually(lambda: hub.conditions("cluster2") == standard(seed()), "mirror")
                    leader, follower = (first, second) if first.leading else (second, first)
                    leader.stop()
                    eventually(lambda: follower.leading, "the failover")
                    # another writer got there first: the write meets a 409 and reads again
                    server.faults.fail_next(1, 409, match=_addon_status)
                    hub.set_copy("cluster1", seed("Degraded", "UpdateFailed"))
                    eventually(
                        lambda: (
                            hub.conditions("cluster1") == standard(seed("Degraded", "UpdateFailed"))
                        ),
                        "the mirror after the failover",
                    )
                    # an admin's hand edit, later than the copy: the copy is read again before
                    # it is written over (docs/spec.md §12.1), then repaired once
                    wanted = standard(seed("Degraded", "UpdateFailed"))
                    edit = cond("Degraded", "False", "HandEdited", at=T1)
                    hub.set_addon_conditions("cluster1", [edit, *wanted[1:]])
                    eventually(lambda: hub.conditions("cluster1") == wanted, "the repair")
                finally:
                    first.stop()
                    second.stop()
        finally:
            hub.close()
        calls = [Request.audited(r) for r in server.audit if r.user == account.username]
    return calls, grants_for(account, objects)


@pytest.fixture(scope="module")
def overlay() -> list[Obj]:
    return build(OVERLAY).objects


@pytest.mark.parametrize("selector", ["", "fleet=prod"], ids=["every-cluster", "selector"])
def test_every_call_of_the_hub_side_is_allowed_and_every_grant_is_used(
    overlay: list[Obj], selector: str
) -> None:
    calls, grants = _run(selector, overlay)
    assert any(r.verb == "watch" and r.resource == "observabilityaddons" for r in calls)
    assert unauthorized(calls, grants) == []
    assert unused(calls, grants) == []
    without = [g for g in grants if "namespaces" not in g.rule.get("resources", [])]
    assert "list namespaces.core (cluster)" in unauthorized(calls, without)


def test_the_acm_overlay_grants_and_writes_the_observability_controller() -> None:
    objects = build(MANIFESTS / "hub-controller-acm").objects
    [container] = find(objects, "Deployment", "addon-status-hub-controller")["spec"]["template"][
        "spec"
    ]["containers"]
    assert "--managed-addon=observability-controller" in container["args"]
    calls, grants = _run("", objects, "observability-controller")
    assert any(r.resource == "managedclusteraddons" and r.verb == "patch" for r in calls)
    assert unauthorized(calls, grants) == []
    assert unused(calls, grants) == []


def test_the_console_link_component_grants_the_links_patch_and_nothing_more(
    overlay: list[Obj],
) -> None:
    objects = build(MANIFESTS / "components" / "console-link", onto=overlay).objects
    calls, grants = _run("", objects)
    links = [r for r in calls if r.resource == "managedclusteraddons" and r.verb == "patch"]
    assert any(not r.subresource for r in links), "the link's annotations"
    assert unauthorized(calls, grants) == []
    assert unused(calls, grants) == []
