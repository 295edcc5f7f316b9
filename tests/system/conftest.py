"""The whole system on one machine: two embedded API servers — the spoke (the addon CR, the leader
Lease) and the hub (the addon CR's copy in namespace `cluster1`) — reached by the real
`kubernetes` client over HTTP, and whole controller replicas (`controller.spoke.app.Replica`)
built in process on free loopback ports, with reports sent over HTTP by `ReportClient`.

Every replica runs as the spoke's ServiceAccount, bound only by the shipped overlay's roles (RBAC
on: manifests/kubernetes, or manifests/acm for `--profile acm`), with a token bound to a pod of
its own, as a Deployment's replicas are: the servers' audit logs tell the replicas apart by the
pod name kube-apiserver puts in `user.extra`. On the hub it writes as the hub identity
manifests/hub binds for `cluster1`. The state machines run on one `FakeClock` the test moves; the
Lease and the hub retries run on real time with short durations. Every thread a test starts is
gone after teardown.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller import ReportClient
from controller.kube.connection import Connection
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION
from controller.spoke.app import Replica
from controller.spoke.options import Address, RunOptions
from kubesim import POD_NAME, APIServer, UserInfo
from tests import support
from tests.clock import FakeClock
from tests.identities import ADMIN as ADMIN_USER
from tests.identities import ADMIN_TOKEN, RBAC_KINDS, Identity, bind, identity
from tests.manifests.kustomize import MANIFESTS, build
from tests.names import MC, UWL

CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
SPOKE_NAMESPACE = "open-cluster-management-addon-observability"
CLUSTER = "cluster1"
NAME = "observability-addon"
WAIT = 10.0  # the longest any single wait may take (a loaded 2-core machine)

ADMIN = ADMIN_TOKEN
HUB_TOKEN, ROTATED_HUB_TOKEN = "hub-token-1", "hub-token-2"
# the spoke's ServiceAccount, by profile: manifests/acm adds the bookkeeping ConfigMap's Role
SPOKE = {
    "seed": identity(MANIFESTS / "kubernetes", "addon-status-controller"),
    "acm": identity(MANIFESTS / "acm", "addon-status-controller"),
}
# what manifests/hub binds for cluster1: its ServiceAccount, the ClusterRole of the copies
HUB_AGENT = Identity(
    CLUSTER, "addon-status",
    tuple(o for o in build(MANIFESTS / "hub").objects if o["kind"] in RBAC_KINDS),
)  # fmt: skip
HUB_WRITER = HUB_AGENT.user.username


def replica_pod(name: str) -> str:
    """The pod replica `name` runs as (its Deployment's pod, as the audit log names it)."""
    return f"addon-status-controller-{name}"


def _pod_token(name: str) -> UserInfo:
    """A token bound to replica `name`'s pod: the ServiceAccount's user, its pod in `extra`."""
    return replace(SPOKE["seed"].user, extra=((POD_NAME, (replica_pod(name),)),))


SPOKE_TOKENS = {
    ADMIN: ADMIN_USER,
    "spoke-token-a": _pod_token("a"),
    "spoke-token-b": _pod_token("b"),
}
HUB_TOKENS = {ADMIN: ADMIN_USER, HUB_TOKEN: HUB_AGENT.user}
LOOPBACK = Address(host="127.0.0.1", port=0)
# Threads of a replica; none may outlive its stop().
THREADS = frozenset({
    "reconcile-worker", "addon-watch", "event-recorder", "metrics", "probes", "report-api",
    "report-api-worker", "metrics-worker", "probes-worker", "hub-replicator", "leader-election",
})  # fmt: skip

ReplicaFactory = Callable[..., Replica]


def api_client(server: APIServer, token: str = ADMIN) -> client.ApiClient:
    return support.api_client(server, token)


def create_addon(server: APIServer, namespace: str) -> None:
    """The namespace and the addon CR in it, created over HTTP as an administrator would."""
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": KIND,
        "metadata": {"name": NAME, "namespace": namespace},
        "spec": {"enableMetrics": True},
    }
    with api_client(server) as admin:
        client.CoreV1Api(admin).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=namespace))
        )
        client.CustomObjectsApi(admin).create_namespaced_custom_object(
            GROUP, VERSION, namespace, PLURAL, body
        )


def write_kubeconfig(path: Path, *, server: APIServer, token: str) -> Path:
    path.write_text(kubeconfig_yaml(server=server.url, token=token, user="spoke"), "utf-8")
    return path


def status_of(server: APIServer, namespace: str) -> dict[str, Any]:
    """The addon CR's status as stored (read beside the API: no audit record, no fault)."""
    obj = server.get_object(GROUP, VERSION, PLURAL, namespace, NAME)
    assert obj is not None
    return dict(obj.get("status") or {})


def conditions(status: dict[str, Any]) -> list[dict[str, Any]]:
    return list(status.get("conditions") or [])


def status_writes(server: APIServer, *, user: str | None = None, pod: str | None = None) -> int:
    """Successful PUTs on the addon CR's status subresource, from the audit log."""
    return server.count_requests(
        verbs=("update",), resource=PLURAL, subresource="status", user=user, pod=pod
    )


def probe(url: str, path: str) -> int:
    try:
        with urllib.request.urlopen(url + path, timeout=WAIT) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as error:
        return int(error.code)


def boot(reporter: ReportClient) -> None:
    """The seed's boot sequence: the operator deployed both collectors, then each forwards."""
    for collector, reason in ((None, "UpdateSuccessful"), (MC, "ForwardSuccessful"),
                              (UWL, "ForwardSuccessful")):  # fmt: skip
        answer = reporter.report(collector, reason=reason, message="ok")
        assert answer["verdict"] == "accepted", answer


@pytest.fixture
def crd() -> Path:
    """The addon's CRD both servers serve (a test module overrides it to serve another)."""
    return CRD


@pytest.fixture
def spoke_server(crd: Path) -> Iterator[APIServer]:
    with APIServer([crd], tokens=SPOKE_TOKENS, rbac=True) as server:
        create_addon(server, SPOKE_NAMESPACE)
        bind(server, SPOKE["seed"])
        yield server


@pytest.fixture
def hub_server(crd: Path) -> Iterator[APIServer]:
    with APIServer([crd], tokens=HUB_TOKENS, rbac=True) as server:
        create_addon(server, CLUSTER)
        bind(server, HUB_AGENT)
        yield server


@pytest.fixture
def hub_kubeconfig(hub_server: APIServer, tmp_path: Path) -> Path:
    return write_kubeconfig(tmp_path / "hub-kubeconfig", server=hub_server, token=HUB_TOKEN)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def replicas(
    spoke_server: APIServer, hub_kubeconfig: Path, clock: FakeClock
) -> Iterator[ReplicaFactory]:
    """`make("a", **options)`: a started replica named `a` (its Lease identity; its spoke token
    bound to pod `replica_pod("a")`), the acm profile's roles bound first. Options override the test
    defaults: loopback, no report authentication, a hub copy in `cluster1`, Lease 1 s / renew
    0.6 s / retry 0.2 s, no staleness."""
    started: list[tuple[Replica, Connection]] = []
    before = set(threading.enumerate())

    def make(name: str = "a", **overrides: Any) -> Replica:
        settings: dict[str, Any] = {
            "metrics_address": LOOPBACK,
            "probe_address": LOOPBACK,
            "report_address": "127.0.0.1:0",
            "insecure": True,
            "hub_kubeconfig": hub_kubeconfig,
            "cluster_name": CLUSTER,
            "request_timeout": 5.0,
            "stale_after": timedelta(hours=6),
            "lease_duration": timedelta(seconds=1),
            "renew_deadline": timedelta(seconds=0.6),
            "retry_period": timedelta(seconds=0.2),
            **overrides,
        }
        if settings.get("profile") == "acm":  # and the Role of its bookkeeping ConfigMap
            bind(spoke_server, SPOKE["acm"])
        api = support.connection(spoke_server, f"spoke-token-{name}")
        replica = Replica(
            RunOptions(**settings),
            api_client=api,
            clock=clock,
            identity=name,
            hub_backoff=(0.02, 0.2),
        )
        started.append((replica, api))
        replica.start()
        return replica

    yield make
    for replica, api in started:
        replica.stop()
        api.close()

    def leftovers() -> set[str]:
        return {t.name for t in set(threading.enumerate()) - before} & THREADS

    deadline = time.monotonic() + WAIT
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not leftovers(), "threads outlived their replica"


@pytest.fixture
def reporters() -> Iterator[Callable[..., ReportClient]]:
    """`reporter(url, **options)`: a `ReportClient`, closed at the end."""
    made: list[ReportClient] = []

    def make(url: str, **options: Any) -> ReportClient:
        options.setdefault("deadline", WAIT)
        made.append(ReportClient(url, **options))
        return made[-1]

    yield make
    for reporter in made:
        reporter.close()
