"""The whole system on one machine: two embedded API servers — the spoke (the addon CR, the
leader Lease) and the hub (the addon CR's copy in namespace `cluster1`) — reached by the real
`kubernetes` client over HTTP, and whole controller replicas (`controller.spoke.app.Replica`) built
in process on free loopback ports, with reports sent over HTTP by `ReportClient`.

Every replica authenticates with a token of its own, so the servers' audit logs tell who wrote
what. The state machines run on one `FakeClock` the test moves; the Lease and the hub retries
run on real time with short durations. Every thread a test starts is gone after teardown.
"""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
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
from kubesim import APIServer, UserInfo
from tests import support
from tests.clock import FakeClock
from tests.names import MC, UWL

CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
SPOKE_NAMESPACE = "open-cluster-management-addon-observability"
CLUSTER = "cluster1"
NAME = "observability-addon"
WAIT = 10.0  # the longest any single wait may take (a loaded 2-core machine)

ADMIN = "admin-token"
HUB_TOKEN, ROTATED_HUB_TOKEN = "hub-token-1", "hub-token-2"
HUB_WRITER = "system:serviceaccount:cluster1:addon-status"
SPOKE_TOKENS = {
    ADMIN: UserInfo("admin", groups=("system:masters",)),
    "spoke-token-a": UserInfo("replica-a"),
    "spoke-token-b": UserInfo("replica-b"),
}
HUB_TOKENS = {ADMIN: SPOKE_TOKENS[ADMIN], HUB_TOKEN: UserInfo(HUB_WRITER)}
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


def status_writes(server: APIServer, *, user: str | None = None) -> int:
    """Successful PUTs on the addon CR's status subresource, from the audit log."""
    return server.count_requests(
        verbs=("update",), resource=PLURAL, subresource="status", user=user
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
    with APIServer([crd], tokens=SPOKE_TOKENS) as server:
        create_addon(server, SPOKE_NAMESPACE)
        yield server


@pytest.fixture
def hub_server(crd: Path) -> Iterator[APIServer]:
    with APIServer([crd], tokens=HUB_TOKENS) as server:
        create_addon(server, CLUSTER)
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
    """`make("a", **options)`: a started replica named `a` (its Lease identity; spoke user
    `replica-a`). Options override the test defaults: loopback, no report authentication, a
    hub copy in `cluster1`, Lease 1 s / renew 0.6 s / retry 0.2 s, no staleness."""
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
