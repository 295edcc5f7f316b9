"""The demo's model of Open Cluster Management (v1.3) writes what OCM writes when the path from a
spoke breaks (controller/demo/ocm_writers.py, ocm_clusters.py, klusterlet.py; docs/demo.md says
what OCM does), on an OCM-shaped hub over HTTP, on a clock the test moves: the
addon's `Available` from the agent's workload (no feedback yet, a ready replica, none), a
cluster whose lease is not renewed for five lease durations lost with every addon of it, and a
registration the addon manager may not make (`RegistrationApplied=False`, the agent's writes
refused) — made again as soon as it may."""

from __future__ import annotations

import pytest

from tests.demo.ocm_world import ocm_world
from tests.support import eventually

pytestmark = pytest.mark.integration

LOST = (
    "Unknown",
    "ManagedClusterLeaseUpdateStopped",
    "Registration agent stopped updating its lease.",
)


def test_available_follows_the_agent_s_deployment_as_the_work_agent_feeds_it_back() -> None:
    with ocm_world() as world:
        # the work agent reported the work applied, and the Deployment has no status yet
        assert world.wait_for("cluster1", "Available", "Unknown") == (
            "Unknown", "NoProbeResult", "Probe results are not returned")  # fmt: skip
        assert world.said("cluster1", "ManifestApplied")[:2] == ("True", "AddonManifestApplied")
        world.agent_runs("cluster1", ready=True)
        assert world.wait_for("cluster1", "Available", "True") == (
            "True", "ProbeAvailable", "addon-status add-on is available.")  # fmt: skip
        world.agent_runs("cluster1", ready=False)  # Kubernetes leaves out readyReplicas: 0
        assert world.wait_for("cluster1", "Available", "False") == (
            "False", "ProbeUnavailable",
            "Probe addon unavailable with err readyReplica is not probed")  # fmt: skip
        world.agent_runs("cluster1", ready=True)
        assert world.wait_for("cluster1", "Available", "True")[1] == "ProbeAvailable"
        # the addon manager's, on every event of the MCA: kept as before
        assert world.said("cluster1", "Progressing")[:2] == ("False", "Completed")


def test_a_cluster_whose_lease_is_not_renewed_for_five_durations_is_lost_with_its_addons() -> None:
    with ocm_world(("cluster1", "cluster2")) as world:
        for cluster in ("cluster1", "cluster2"):
            world.agent_runs(cluster, ready=True)
            world.wait_for(cluster, "Available", "True")
        assert world.cluster_said("cluster2")[0] == "True"  # its klusterlet said so
        world.move(minutes=10)  # a running klusterlet renews on its way: nobody is lost
        world.settled()
        world.klusterlets["cluster2"].stop()
        world.move(minutes=4, seconds=59)
        world.settled()
        assert world.cluster_said("cluster2")[0] == "True"
        assert world.said("cluster2", "Available")[0] == "True"
        world.move(seconds=1)  # five lease durations (60 s each) since its last renewal
        eventually(lambda: world.cluster_said("cluster2") == LOST, "cluster2 lost")
        assert world.wait_for("cluster2", "Available", "Unknown") == LOST
        # the other cluster, whose klusterlet runs, is not
        assert world.cluster_said("cluster1")[0] == world.said("cluster1", "Available")[0] == "True"
        world.klusterlets["cluster2"].start()
        eventually(lambda: world.cluster_said("cluster2")[0] == "True", "cluster2 back")
        assert world.wait_for("cluster2", "Available", "True")[1] == "ProbeAvailable"


def test_a_refused_registration_is_registration_applied_false_and_the_agent_may_not_write() -> None:
    with ocm_world(grant_bind=False) as world:
        status, reason, message = world.wait_for("cluster1", "RegistrationApplied", "False")
        assert (status, reason) == ("False", "SetPermissionFailed")
        # kube-apiserver's refusal as the addon framework quotes it (as far as the seam keeps it)
        assert message.startswith("Failed to set permission for hub agent: rolebindings."), message
        assert 'is forbidden: user "system:serviceaccount:open-cluster-management-hub:' in message
        assert not world.agent_may_write("cluster1")
        assert world.agent_writes_its_copy("cluster1") == 403
        # the rollout's grant applied: the addon manager's next look registers the agent
        world.hub.put_object("rbac.authorization.k8s.io", "v1", "clusterrolebindings", {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": "addon-status:addon-manager"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                        "name": "addon-status:addon-manager"},
            "subjects": [{"kind": "ServiceAccount", "name": "addon-manager-controller-sa",
                          "namespace": "open-cluster-management-hub"}],
        })  # fmt: skip
        world.move(seconds=30)  # the addon manager's resync
        assert (
            world.wait_for("cluster1", "RegistrationApplied", "True")[1] == "SetPermissionApplied"
        )
        assert world.agent_may_write("cluster1")
        assert world.agent_writes_its_copy("cluster1") == 201


def test_the_addon_manager_makes_a_deleted_agent_role_binding_again_unless_refused() -> None:
    binding = ("rbac.authorization.k8s.io", "v1", "rolebindings", "cluster1",
               "open-cluster-management:addon-status:clusterrole:agent")  # fmt: skip
    with ocm_world() as world:
        world.wait_for("cluster1", "RegistrationApplied", "True")
        first = world.hub.get_object(*binding)
        assert first is not None
        assert world.hub.delete_object(*binding)
        eventually(lambda: world.hub.get_object(*binding) is not None, "the binding made again")
        assert world.agent_may_write("cluster1")
        assert world.said("cluster1", "RegistrationApplied")[0] == "True"
        # without the rollout's grant, deleting it is for good: registration refused
        world.hub.delete_object("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "",
                                "addon-status:addon-manager")  # fmt: skip
        assert world.hub.delete_object(*binding)
        assert (
            world.wait_for("cluster1", "RegistrationApplied", "False")[1] == "SetPermissionFailed"
        )
        assert world.hub.get_object(*binding) is None
        assert not world.agent_may_write("cluster1")
