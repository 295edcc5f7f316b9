"""The hub side when the path from a spoke breaks (docs/spec.md §12.2), against kubesim over HTTP:
OCM's view written as OCM v1.3 writes it (the agent's `Available` from its workload, a lost
cluster's `Unknown`, `RegistrationApplied`, `ManifestApplied`), RBAC answering the hub side's
SubjectAccessReviews for the agent's identity, and what the ACM console then shows for each
ManagedClusterAddOn (its mapping restated in tests/hub/console.py)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from prometheus_client import CollectorRegistry

from controller.hub.access import AccessReviews
from controller.hub.caches import LINK, LINK_OWNER, LINK_TEXT
from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
from controller.kube.rest import RestKube
from statemachines.conditions import format_time
from tests.clock import FakeClock
from tests.hub.console import shown
from tests.hub.hubside import Hub, cond, hub_server, replica, sample, seed
from tests.identities import grant
from tests.manifests.kustomize import MANIFESTS
from tests.support import connection, eventually

pytestmark = pytest.mark.integration

AGO = format_time(datetime.now(UTC) - timedelta(hours=1))  # a break long past its window
LEASE = "ManagedClusterLeaseUpdateStopped"
COPY = seed("Available", "ForwardSuccessful", "metrics sent")
UP = cond("Available", "True", "ProbeAvailable", "", at=AGO)
NOT_READY = "Probe addon unavailable with err no ready replica of addon-status-controller"
DOWN = cond("Available", "False", "ProbeUnavailable", NOT_READY, at=AGO)
LOST = cond("Available", "Unknown", LEASE, "Registration agent stopped updating its lease.", at=AGO)
DEPLOYED = cond("ManifestApplied", "True", "AddonManifestApplied", "manifests applied", at=AGO)
REGISTERED = cond("RegistrationApplied", "True", "SetPermissionApplied", "", at=AGO)
REFUSED = cond("RegistrationApplied", "False", "SetPermissionFailed",
               "rolebindings.rbac.authorization.k8s.io is forbidden", at=AGO)  # fmt: skip


@pytest.fixture
def hub() -> Iterator[Hub]:
    with hub_server() as made:
        yield made


def degraded(hub: Hub, cluster: str) -> dict[str, Any] | None:
    return next((c for c in hub.conditions(cluster) if c["type"] == "Degraded"), None)


def reason_of(hub: Hub, cluster: str) -> object:
    found = degraded(hub, cluster)
    return None if found is None else found["reason"]


def ocm(hub: Hub, cluster: str, *conditions: dict[str, Any]) -> None:
    """OCM's conditions on the ManagedClusterAddOn, as its writers leave them: read, set, write
    with the read resourceVersion, again after a 409 (the hub side writes too)."""
    kinds = {c["type"] for c in conditions}
    for _ in range(20):
        kept = [c for c in hub.conditions(cluster) if c["type"] not in kinds]
        try:
            hub.set_addon_conditions(cluster, [*conditions, *kept])
            return
        except ApiException as error:
            if error.status != 409:
                raise
    raise AssertionError("OCM's write kept meeting 409")


def managed_cluster(hub: Hub, cluster: str, status: str, reason: str, message: str) -> None:
    """OCM's registration controller's word on the cluster (its lease)."""
    available = {"type": "ManagedClusterConditionAvailable", "status": status, "reason": reason,
                 "message": message, "lastTransitionTime": AGO}  # fmt: skip
    hub.server.put_object("cluster.open-cluster-management.io", "v1", "managedclusters", {
        "apiVersion": "cluster.open-cluster-management.io/v1", "kind": "ManagedCluster",
        "metadata": {"name": cluster, "labels": {"env": "prod"}},
        "spec": {"hubAcceptsClient": True, "leaseDurationSeconds": 60},
        "status": {"conditions": [available]},
    })  # fmt: skip


def test_an_agent_that_is_not_running_is_degraded_on_the_console_and_the_copy_returns_after(
    hub: Hub,
) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", COPY)
    with replica(hub) as made:
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardSuccessful", "the mirror")
        ocm(hub, "cluster1", DOWN, DEPLOYED, REGISTERED)
        eventually(lambda: reason_of(hub, "cluster1") == "AgentUnavailable", "the agent down")
        word, message = shown(hub.conditions("cluster1"))
        assert word == "Degraded"
        assert "not running on cluster cluster1" in message and "no ready replica" in message
        assert "Available (ForwardSuccessful) since" in message  # the last status, not current
        assert made.side.path_reasons() == {"cluster1": "AgentUnavailable"}
        ocm(hub, "cluster1", UP)
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardSuccessful", "the copy again")
        assert shown(hub.conditions("cluster1"))[0] == "Available"
        assert made.side.path_reasons() == {}


def test_a_cluster_whose_addon_is_removed_leaves_the_path_metrics(hub: Hub) -> None:
    """The addon disabled on a cluster whose agent was down (OCM deletes its
    ManagedClusterAddOn): the console has no row for it, and the metric the agent-down alert
    reads no longer names it."""
    hub.cluster("cluster1")
    hub.set_copy("cluster1", COPY)
    with replica(hub) as made:
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardSuccessful", "the mirror")
        ocm(hub, "cluster1", DOWN, DEPLOYED, REGISTERED)
        eventually(lambda: made.side.path_reasons() == {"cluster1": "AgentUnavailable"}, "down")
        hub.delete_addon("cluster1")
        eventually(lambda: made.side.path_reasons() == {}, "the verdict gone with its row")


def test_a_lost_cluster_shows_unknown_never_the_copys_stale_verdict(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", seed("Degraded", "ForwardFailure", "remote write 503"))
    with replica(hub):
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardFailure", "the mirror")
        message = "Registration agent stopped updating its lease."
        managed_cluster(hub, "cluster1", "Unknown", LEASE, message)
        ocm(hub, "cluster1", LOST)
        eventually(lambda: reason_of(hub, "cluster1") == "ClusterLost", "the cluster lost")
        assert degraded(hub, "cluster1")["status"] == "Unknown"  # type: ignore[index]
        assert shown(hub.conditions("cluster1")) == ("Unknown", message)
        managed_cluster(hub, "cluster1", "True", "ManagedClusterAvailable", "")
        ocm(hub, "cluster1", UP)
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardFailure", "the copy's verdict")


def test_an_agent_not_registered_is_degraded_naming_registration(hub: Hub) -> None:
    """No access review here (its answer, not OCM's, would name the agent's missing binding:
    tests/hub/test_path.py)."""
    hub.cluster("cluster1")
    hub.set_copy("cluster1", COPY)
    with replica(hub, access_check=timedelta(0)):
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardSuccessful", "the mirror")
        ocm(hub, "cluster1", UP, REFUSED)
        eventually(lambda: reason_of(hub, "cluster1") == "AgentNotRegistered", "the refusal")
        word, message = shown(hub.conditions("cluster1"))
        assert word == "Degraded" and "SetPermissionFailed" in message


def test_a_cluster_whose_copy_never_came_is_degraded_after_the_grace_period(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.delete_copy("cluster1")
    _bind(hub, "cluster1")  # the agent may write its copy: it just never did
    ocm(hub, "cluster1", UP, DEPLOYED, REGISTERED)
    registry = CollectorRegistry()
    with replica(hub, registry=registry):
        eventually(lambda: reason_of(hub, "cluster1") == "StatusNotReplicated", "the grace out")
        word, message = shown(hub.conditions("cluster1"))
        assert word == "Degraded" and "addon-status check spoke" in message
        path = "addon_status_hub_cluster_path"
        assert sample(registry, path, cluster="cluster1", reason="StatusNotReplicated") == 1
        assert sample(registry, "addon_status_hub_clusters_path", reason="ClusterLost") == 0


def test_a_break_is_counted_once_it_held_for_the_window(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", COPY)
    with replica(hub, path_window=timedelta(seconds=1)):
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardSuccessful", "the mirror")
        started = format_time(datetime.now(UTC))
        ocm(hub, "cluster1", {**DOWN, "lastTransitionTime": started})
        eventually(lambda: reason_of(hub, "cluster1") == "AgentUnavailable", "the window out")


def test_an_agent_that_may_not_write_its_copy_is_degraded_until_it_may_again() -> None:
    """RBAC answers the hub side's SubjectAccessReview for the agent's identity, as OCM's
    registration names it: cluster1's agent is bound, cluster2's binding was deleted."""
    with hub_server() as hub:
        _may_not_write(hub)


def _bind(hub: Hub, cluster: str) -> None:
    """The agent's hub RoleBinding as OCM's addon manager makes it (the role made once)."""
    rbac = client.RbacAuthorizationV1Api(hub._api)
    try:
        rbac.create_cluster_role(client.V1ClusterRole(
            metadata=client.V1ObjectMeta(name="addon-status-hub"),
            rules=[client.V1PolicyRule(api_groups=["observability.open-cluster-management.io"],
                                       resources=["observabilityaddons/status"], verbs=["update"],
                                       resource_names=["observability-addon"])],
        ))  # fmt: skip
    except ApiException as error:
        if error.status != 409:
            raise
    group = f"system:open-cluster-management:cluster:{cluster}:addon:addon-status"
    rbac.create_namespaced_role_binding(cluster, client.V1RoleBinding(
        metadata=client.V1ObjectMeta(name="open-cluster-management:addon-status:agent"),
        role_ref=client.V1RoleRef(api_group="rbac.authorization.k8s.io", kind="ClusterRole",
                                  name="addon-status-hub"),
        subjects=[client.RbacV1Subject(kind="Group", name=group,
                                       api_group="rbac.authorization.k8s.io")],
    ))  # fmt: skip


def _may_not_write(hub: Hub) -> None:
    for cluster in ("cluster1", "cluster2"):
        hub.cluster(cluster)
        hub.set_copy(cluster, COPY)
    _bind(hub, "cluster1")
    with replica(hub, access_check=timedelta(seconds=1), path_window=timedelta(seconds=1)):
        eventually(lambda: reason_of(hub, "cluster2") == "StatusNotReplicated", "the denial")
        assert reason_of(hub, "cluster1") == "ForwardSuccessful"
        assert "may not update observabilityaddons/status" in degraded(hub, "cluster2")["message"]  # type: ignore[index]
        _bind(hub, "cluster2")
        eventually(lambda: reason_of(hub, "cluster2") == "ForwardSuccessful", "allowed again")


def test_the_console_link_is_kept_rewritten_when_it_changes_and_removed_with_the_flag(
    hub: Hub,
) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", COPY)
    assert hub.identity is not None  # manifests/components/console-link's one grant, as shipped
    [rule] = [p for p in _console_link_rules() if p["resources"] == ["managedclusteraddons"]]
    grant(hub.server, hub.identity, [rule], "console link")

    def annotations() -> dict[str, str]:
        return dict(hub.addon("cluster1")["metadata"].get("annotations") or {})

    url = "https://grafana.example.com/d/addon-status-spoke?var-cluster={cluster}"
    with replica(hub, console_link=url):
        eventually(lambda: LINK in annotations(), "the link")
        assert annotations()[LINK].endswith("var-cluster=cluster1")
        assert annotations()[LINK_TEXT] == "Metrics dashboard"
    writes = hub.server.count_requests(resource=MCA.plural, verbs=("patch",), subresource="")
    with replica(hub, console_link=url):  # the same link: not written again
        hub.set_copy("cluster1", seed("Degraded", "ForwardFailure"))
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardFailure", "a sync")
    assert (
        hub.server.count_requests(resource=MCA.plural, verbs=("patch",), subresource="") == writes
    )
    with replica(hub, console_link=url.replace("grafana", "dashboards")):
        eventually(lambda: "dashboards" in annotations().get(LINK, ""), "the new link")
    with replica(hub):
        eventually(lambda: LINK not in annotations() and LINK_OWNER not in annotations(), "gone")


def test_an_administrators_own_link_is_left_alone(hub: Hub) -> None:
    hub.cluster("cluster1")
    hub.set_copy("cluster1", COPY)
    theirs = {LINK: "https://theirs.example.com", LINK_TEXT: "theirs"}
    obj = hub.addon("cluster1")
    obj["metadata"]["annotations"] = theirs
    hub.custom.replace_namespaced_custom_object(
        MCA.group, MCA.version, "cluster1", MCA.plural, "addon-status", obj
    )
    with replica(hub, console_link="https://ours.example.com/{cluster}") as made:
        eventually(lambda: reason_of(hub, "cluster1") == "ForwardSuccessful", "the mirror")
        assert made.side.wait_idle(5)
    assert hub.addon("cluster1")["metadata"]["annotations"] == theirs


def test_on_acm_the_agents_own_addon_tells_whether_it_runs_and_acms_addon_shows_it() -> None:
    """The acm rollout's agent is OCM's `addon-status` addon; the console reads the
    observability operator's `observability-controller` (docs/spec.md §12.2)."""
    with hub_server(acm=True) as hub:
        acms = Hub(hub.server, addon="observability-controller")
        try:
            hub.cluster("cluster1")
            acms.create_addon("cluster1")
            hub.set_copy("cluster1", COPY)
            ocm(hub, "cluster1", DOWN)  # on the agent's addon
            with replica(hub, addon_name="observability-controller", agent_addon="addon-status"):
                eventually(lambda: reason_of(acms, "cluster1") == "AgentUnavailable", "acm's")
                assert degraded(hub, "cluster1") is None  # the agent's addon is OCM's alone
        finally:
            acms.close()


def test_a_refusal_is_asked_again_at_its_windows_end_and_one_lifted_by_then_never_counts() -> None:
    """OCM binds the agent's role a moment after it makes the ManagedClusterAddOn: the first
    review may refuse. It is asked again when the window ends, before it could count."""
    clock = FakeClock()
    with hub_server() as hub:
        hub.cluster("cluster2")
        with connection(hub.server, "hub-a") as api:
            reviews = AccessReviews(
                RestKube(api), addon="addon-status", copy_name="observability-addon",
                interval=3600, recheck=120, clock=clock.monotonic, now=clock.now,
            )  # fmt: skip
            assert reviews.check("cluster2") == 120  # refused: asked again in the window
            assert reviews.denied("cluster2") is not None and not reviews.allowed("cluster2")
            assert reviews.check("cluster2") == 120  # not due: not asked
            _bind(hub, "cluster2")
            clock.move(seconds=120)
            waits = reviews.check("cluster2")
            assert waits is not None and waits > 3000  # allowed: the interval again
            assert reviews.denied("cluster2") is None and reviews.allowed("cluster2")


def test_a_refusal_just_written_is_asked_again_within_seconds() -> None:
    """The hub side's own StatusNotReplicated write is the change on which OCM's addon manager
    re-creates a missing agent RoleBinding (on OCM v1.3: 26 to 285 ms after it): `soon` asks
    again within seconds, not at the window's end; with nothing refused it does nothing."""
    clock = FakeClock()
    with hub_server() as hub:
        hub.cluster("cluster2")
        with connection(hub.server, "hub-a") as api:
            reviews = AccessReviews(
                RestKube(api), addon="addon-status", copy_name="observability-addon",
                interval=3600, recheck=120, clock=clock.monotonic, now=clock.now,
            )  # fmt: skip
            assert reviews.soon("cluster2", 5) is None  # never asked: nothing to confirm
            assert reviews.check("cluster2") == 120
            assert reviews.soon("cluster2", 5) == 5
            _bind(hub, "cluster2")
            clock.move(seconds=5)
            waits = reviews.check("cluster2")
            assert waits is not None and waits > 3000
            assert reviews.denied("cluster2") is None and reviews.allowed("cluster2")
            assert reviews.soon("cluster2", 5) is None


def test_a_verdict_ocm_lifts_on_the_hub_sides_own_write_is_gone_within_seconds() -> None:
    """As OCM v1.3 does (issue 31's check on its own controllers): the agent's RoleBinding is
    re-created on the ManagedClusterAddOn's next change, here the hub side's StatusNotReplicated
    write. The verdict goes at the review asked seconds after that write; the window's own
    (ten minutes of real time) would come long after this test's wait."""
    clock = FakeClock(datetime.now(UTC))  # after the copy's last change, as on a live hub
    with hub_server() as hub:
        hub.cluster("cluster2")
        hub.set_copy("cluster2", COPY)
        with replica(hub, clock=clock.now, access_check=timedelta(seconds=1),
                     path_window=timedelta(minutes=10)) as made:  # fmt: skip
            side = made.side
            eventually(lambda: side._access.denied("cluster2") is not None, "the refusal")
            clock.move(minutes=11)  # the refusal held for the window
            side.resync()
            eventually(lambda: reason_of(hub, "cluster2") == "StatusNotReplicated", "the verdict")
            _bind(hub, "cluster2")  # OCM, on that write
            eventually(lambda: reason_of(hub, "cluster2") == "ForwardSuccessful", "allowed again")


def _console_link_rules() -> list[dict[str, Any]]:
    """The rules manifests/components/console-link adds to the hub side's ClusterRole."""
    component = MANIFESTS / "components" / "console-link" / "kustomization.yaml"
    [patch] = [
        p for p in yaml.safe_load(component.read_text())["patches"]
        if p["target"]["kind"] == "ClusterRole"
    ]  # fmt: skip
    return [op["value"] for op in yaml.safe_load(patch["patch"]) if op["op"] == "add"]
