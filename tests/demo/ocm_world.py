"""The demo's OCM-shaped hub for one or more clusters, with the demo's model of OCM's controllers
(`OcmWriters`) and each cluster's klusterlet on a clock the test moves, each spoke serving the
rendered agent: what the tests of that model run on, over HTTP. A test plays the spoke's kubelet
(the agent's Deployment status) and reads what OCM wrote with the real `kubernetes` client."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from kubernetes import client

from controller.demo.addon_manager import Rendered
from controller.demo.command import DEFAULT_SCENARIO
from controller.demo.klusterlet import Klusterlet
from controller.demo.ocm_hub import ADDON_MANAGER_TOKEN, HUB_TOKEN, hub_server
from controller.demo.ocm_writers import OcmWriters
from controller.demo.scenario_file import read
from controller.demo.servers import (
    SPOKE_NAMESPACE,
    agent_token,
    agent_tokens,
    rollout,
    spoke_server,
)
from kubesim import APIServer
from tests.clock import FakeClock
from tests.support import api_client, eventually, kube_of

ADDON = "addon-status"
AGENT = "addon-status-controller"  # the agent's Deployment, as the template names it
MCA = ("addon.open-cluster-management.io", "v1alpha1", "managedclusteraddons")


@dataclass
class World:
    hub: APIServer
    spokes: dict[str, APIServer]
    shares: dict[str, Rendered]
    writers: OcmWriters
    klusterlets: dict[str, Klusterlet]
    clock: FakeClock
    admin: client.ApiClient

    def move(self, **delta: float) -> None:
        """The clock moves (each running klusterlet renewing on its way), and OCM looks again."""
        moment = self.clock() + timedelta(**delta)
        for klusterlet in self.klusterlets.values():
            klusterlet.renew(moment)
        self.clock.move(**delta)
        self.writers.tick()

    def settled(self) -> None:
        assert self.writers.settled(10.0), "OCM's writers did not settle"

    def addon(self, cluster: str) -> dict[str, Any]:
        found: dict[str, Any] = client.CustomObjectsApi(self.admin).get_namespaced_custom_object(
            *MCA[:2], cluster, MCA[2], ADDON
        )
        return found

    def said(self, cluster: str, kind: str) -> tuple[str, str, str]:
        """(status, reason, message) of the MCA's condition `kind` ((): absent)."""
        for found in (self.addon(cluster).get("status") or {}).get("conditions") or []:
            if found["type"] == kind:
                return (found["status"], found["reason"], found["message"])
        return ("", "", "")

    def cluster_said(self, cluster: str) -> tuple[str, str, str]:
        """(status, reason, message) of the ManagedCluster's ManagedClusterConditionAvailable."""
        found: dict[str, Any] = client.CustomObjectsApi(self.admin).get_cluster_custom_object(
            "cluster.open-cluster-management.io", "v1", "managedclusters", cluster
        )
        for condition in (found.get("status") or {}).get("conditions") or []:
            if condition["type"] == "ManagedClusterConditionAvailable":
                return (condition["status"], condition["reason"], condition["message"])
        return ("", "", "")

    def wait_for(self, cluster: str, kind: str, status: str) -> tuple[str, str, str]:
        eventually(lambda: self.said(cluster, kind)[0] == status, f"{cluster}: {kind}={status}")
        return self.said(cluster, kind)

    def agent_runs(self, cluster: str, ready: bool) -> None:
        """The spoke's kubelet and Deployment controller: the agent's pod ready, or not."""
        # a count of 0 is left out, as Kubernetes leaves it out (null removes it in a patch)
        counts = {"readyReplicas": 1, "availableReplicas": 1, "unavailableReplicas": None}
        if not ready:
            counts = {"readyReplicas": None, "availableReplicas": None, "unavailableReplicas": 1}
        body = {"status": {"replicas": 1, "updatedReplicas": 1, **counts}}
        with api_client(self.spokes[cluster]) as api:
            client.AppsV1Api(api).patch_namespaced_deployment_status(AGENT, SPOKE_NAMESPACE, body)

    def agent_writes_its_copy(self, cluster: str) -> int:
        """The agent's first hub write (it creates its copy), with the real client: the HTTP
        status of the answer."""
        body = {"apiVersion": "observability.open-cluster-management.io/v1beta1",
                "kind": "ObservabilityAddon",
                "metadata": {"name": "observability-addon"}}  # fmt: skip
        with api_client(self.hub, agent_token(cluster)) as api:
            try:
                client.CustomObjectsApi(api).create_namespaced_custom_object(
                    "observability.open-cluster-management.io", "v1beta1", cluster,
                    "observabilityaddons", body,
                )  # fmt: skip
            except client.ApiException as error:
                return int(error.status)
        return 201

    def agent_may_write(self, cluster: str) -> bool:
        """Whether the cluster's agent may create its hub copy (its first write), as RBAC says:
        asked as the agent itself (SelfSubjectAccessReview)."""
        with api_client(self.hub, agent_token(cluster)) as api:
            review = client.V1SelfSubjectAccessReview(
                spec=client.V1SelfSubjectAccessReviewSpec(
                    resource_attributes=client.V1ResourceAttributes(
                        verb="create", group="observability.open-cluster-management.io",
                        resource="observabilityaddons", namespace=cluster,
                    )
                )
            )  # fmt: skip
            answer = client.AuthorizationV1Api(api).create_self_subject_access_review(review)
        return bool(answer.status.allowed)


@contextmanager
def ocm_world(
    clusters: tuple[str, ...] = ("cluster1",), *, grant_bind: bool = True, klusterlets: bool = True
) -> Iterator[World]:
    """The world above; `grant_bind=False`: the rollout's `bind` grant to the addon manager is
    gone (its registration refused); `klusterlets=False`: none started yet."""
    clock = FakeClock()
    shares = rollout(list(clusters))
    scenario = read(DEFAULT_SCENARIO)
    with ExitStack() as stack:
        hub = stack.enter_context(hub_server(shares, agent_tokens(shares), clock=clock))
        if not grant_bind:
            hub.delete_object("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "",
                              "addon-status:addon-manager")  # fmt: skip
        manager = kube_of(hub, ADDON_MANAGER_TOKEN)  # the addon manager's own identity
        writers = OcmWriters(kube_of(hub, HUB_TOKEN), addon_name=ADDON, now=clock,
                             rendered=shares, addon_manager=manager)  # fmt: skip
        writers.start()
        stack.callback(writers.stop)
        spokes, running = {}, {}
        for cluster, share in shares.items():
            spokes[cluster] = stack.enter_context(spoke_server(scenario, (), share.agent))
            running[cluster] = Klusterlet(
                kube_of(hub, HUB_TOKEN), kube_of(spokes[cluster]), cluster=cluster, addon=ADDON,
                manifests=share.agent, now=clock,
            )  # fmt: skip
            stack.callback(running[cluster].stop)
            if klusterlets:
                running[cluster].start()
        admin = stack.enter_context(api_client(hub, HUB_TOKEN))
        yield World(hub, spokes, shares, writers, running, clock, admin)
