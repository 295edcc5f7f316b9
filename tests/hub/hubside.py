"""What the hub side's integration tests share: an embedded hub serving the hub copies' CRD and
the upstream `ManagedClusterAddOn` CRD, cluster namespaces with a copy and a
`ManagedClusterAddOn` each, and hub-side replicas on it through the real client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from kubernetes import client
from prometheus_client import CollectorRegistry

from controller.hub.app import HubReplica
from controller.hub.mirror import CLUSTER_LABEL, OWNED_TYPES, managed_cluster_addon
from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
from controller.hub.options import HubOptions
from controller.kube.backoff import Backoff
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION
from kubesim import APIServer, UserInfo
from tests.identities import (
    HUB_CONTROLLER,
    HUB_CONTROLLER_ACM,
    Identity,
    bind,
    identity,
    tokens_for,
)
from tests.support import api_client, condition, connection

ROOT: Final = Path(__file__).resolve().parents[2]
COPY_CRD: Final = ROOT / "manifests" / "base" / "crd.yaml"
MCA_CRD: Final = ROOT / "tests" / "data" / "upstream" / "managedclusteraddons.crd.yaml"
CLUSTER_CRD: Final = ROOT / "tests" / "data" / "upstream" / "managedclusters.crd.yaml"
COPY: Final = "observability-addon"
ADDON: Final = "addon-status"
T0: Final = "2026-11-24T01:00:00Z"
T1: Final = "2026-11-24T02:00:00Z"
TOKENS: Final = {
    "admin": UserInfo("admin", groups=("system:masters",)),
    "hub-a": UserInfo("hub-side-a", groups=("system:masters",)),
    "hub-b": UserInfo("hub-side-b", groups=("system:masters",)),
}
# The shipped hub side's ServiceAccount (manifests/hub-controller, and -acm for ACM's
# `observability-controller`): what `hub_server` runs the replicas as, bound by the overlay's roles.
HUB_SIDE: Final = identity(HUB_CONTROLLER, "addon-status-hub-controller")
HUB_SIDE_ACM: Final = identity(HUB_CONTROLLER_ACM, "addon-status-hub-controller")
HUB_USER: Final = HUB_SIDE.user.username  # who the replicas' requests are from

Obj = dict[str, Any]


def cond(kind: str, status: str, reason: str, message: str = "", at: str = T0) -> Obj:
    """A condition as OCM writes one: every field, the reason always given."""
    return condition(kind, status, reason=reason, message=message, at=at)


def seed(
    true: str = "Available", reason: str = "UpdateSuccessful", message: str = "", at: str = T0
) -> list[Obj]:
    """A hub copy's conditions in the seed profile: five standard types and a collector's."""
    return [
        *(
            cond(kind, "True" if kind == true else "False", reason, message, at)
            for kind in ("Available", "Progressing", "Degraded", "Disabled", "NotSupported")
        ),
        cond("MetricsCollector", "True", "ForwardSuccessful"),
    ]


def acm(
    true: str = "Degraded", reason: str = "Disabled", message: str = "", at: str = T0
) -> list[Obj]:
    """The `acm` profile's shape: three standard types; disabled is Degraded=True, Disabled."""
    return [
        *(
            cond(kind, "True" if kind == true else "False", reason, message, at)
            for kind in ("Available", "Progressing", "Degraded")
        ),
        cond("MetricsCollector", "False", reason),
    ]


def api(server: APIServer, token: str = "admin") -> client.ApiClient:
    return api_client(server, token)


class Hub:
    """The embedded hub, written to as the spokes' replication and OCM would."""

    def __init__(
        self, server: APIServer, addon: str = ADDON, *, identity: Identity | None = None
    ) -> None:
        self.server = server
        self.identity = identity  # the hub side's ServiceAccount, when bound by its roles
        self.addon_name = addon  # the ManagedClusterAddOn's name
        self._api = api(server)
        self.custom = client.CustomObjectsApi(self._api)
        self.core = client.CoreV1Api(self._api)

    def close(self) -> None:
        self._api.close()  # type: ignore[no-untyped-call]

    def cluster(
        self, name: str, *, labels: dict[str, str] | None = None, addon: bool = True
    ) -> None:
        meta = client.V1ObjectMeta(name=name, labels={CLUSTER_LABEL: name, **(labels or {})})
        self.core.create_namespace(client.V1Namespace(metadata=meta))
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            # as ACM's observability operator makes it (its placementrule copies no other)
            "metadata": {"name": COPY, "labels": {"owner": "multicluster-observability-operator"}},
            "spec": {"enableMetrics": True},
        }
        self.custom.create_namespaced_custom_object(GROUP, VERSION, name, PLURAL, body)
        if addon:
            self.create_addon(name)

    def create_addon(self, cluster: str) -> None:
        self.custom.create_namespaced_custom_object(
            MCA.group,
            MCA.version,
            cluster,
            MCA.plural,
            managed_cluster_addon(cluster, self.addon_name),
        )

    def set_copy(self, cluster: str, conditions: list[Obj]) -> None:
        """What the spoke's replication does: the copy's status, through the API."""
        obj = self.custom.get_namespaced_custom_object(GROUP, VERSION, cluster, PLURAL, COPY)
        obj["status"] = {"conditions": conditions}
        self.custom.replace_namespaced_custom_object_status(
            GROUP, VERSION, cluster, PLURAL, COPY, obj
        )

    def delete_copy(self, cluster: str) -> None:
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, cluster, PLURAL, COPY)

    def delete_addon(self, cluster: str) -> None:
        """OCM's addon manager, when the addon is disabled on the cluster."""
        self.custom.delete_namespaced_custom_object(
            MCA.group, MCA.version, cluster, MCA.plural, self.addon_name
        )

    def addon(self, cluster: str) -> Obj:
        obj: Obj = self.custom.get_namespaced_custom_object(
            MCA.group, MCA.version, cluster, MCA.plural, self.addon_name
        )
        return obj

    def conditions(self, cluster: str) -> list[Obj]:
        return list((self.addon(cluster).get("status") or {}).get("conditions") or [])

    def set_addon_conditions(self, cluster: str, conditions: list[Obj]) -> None:
        """Another writer's status write on the ManagedClusterAddOn."""
        obj = self.addon(cluster)
        obj["status"] = {**(obj.get("status") or {}), "conditions": conditions}
        self.custom.replace_namespaced_custom_object_status(
            MCA.group, MCA.version, cluster, MCA.plural, self.addon_name, obj
        )

    def writes(self, cluster: str | None = None, user: str | None = None) -> int:
        """Successful status writes on ManagedClusterAddOns (by `user`)."""
        return self.server.count_requests(
            resource=MCA.plural,
            subresource="status",
            namespace=cluster,
            user=user,
            verbs=("update", "patch"),
        )


@contextmanager
def hub_server(*, rbac: bool = True, acm: bool = False) -> Iterator[Hub]:
    """The embedded hub, authorizing as kube-apiserver's RBAC does: `hub-a` and `hub-b` are
    two replicas of the hub side's ServiceAccount, bound only by the shipped overlay's roles
    (`acm`: manifests/hub-controller-acm), so a call those roles do not allow fails the test;
    `admin` (system:masters) writes as OCM and the spokes would. `rbac=False`: everyone
    allowed (a test of a refusal's handling that fakes the refusal itself)."""
    side = HUB_SIDE_ACM if acm else HUB_SIDE
    tokens = tokens_for(**{"hub-a": side, "hub-b": side}) if rbac else TOKENS
    tokens = {**tokens, "admin": TOKENS["admin"]}
    with APIServer([COPY_CRD, MCA_CRD, CLUSTER_CRD], tokens=tokens, rbac=rbac) as server:
        if rbac:
            bind(server, side)
        hub = Hub(server, identity=side)
        try:
            yield hub
        finally:
            hub.close()


@contextmanager
def replica(
    hub: Hub,
    *,
    token: str = "hub-a",
    registry: CollectorRegistry | None = None,
    clock: Callable[[], datetime] | None = None,
    **settings: Any,
) -> Iterator[HubReplica]:
    """A started hub-side replica as `token`, fast backoff, no servers; `clock`: the time OCM's
    view is judged at."""
    if hub.identity is not None:  # the Deployment's POD_NAMESPACE: where its Role lets it lease
        settings.setdefault("lease_namespace", hub.identity.namespace)
    chosen = HubOptions(request_timeout=5.0, **settings)
    with (
        connection(hub.server, token) as client_,
        HubReplica(
            chosen,
            client_,
            serve=False,
            registry=registry,
            identity=token,
            backoff=Backoff(initial=0.02, maximum=0.2),
            watch_seconds=30,
            clock=clock,
        ) as made,
    ):
        yield made


def standard(conditions: list[Obj]) -> list[Obj]:
    """What the hub side writes of `conditions`: the types it owns (docs/spec.md §12.1)."""
    return [c for c in conditions if c["type"] in OWNED_TYPES]


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels or None)
    return 0.0 if value is None else value
