"""The spoke controller against the embedded API server, through the real `kubernetes` client
over real HTTP: one server and one addon CR per test, a controller factory that stops what it
started, and readers of the CR, its Events and the server's audit log."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

import pytest
from kubernetes import client
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from controller.flags.options import Address
from controller.kube.api import Kube
from controller.spoke.addon import GROUP, PLURAL, VERSION
from controller.spoke.app import Replica
from controller.spoke.options import RunOptions
from kubesim import APIServer
from tests.clock import FakeClock
from tests.identities import ADMIN_TOKEN, bind, identity, tokens_for
from tests.manifests.kustomize import MANIFESTS
from tests.spoke.fakes import NAME, NAMESPACE
from tests.spoke.support import spoke_replica
from tests.support import api_client, connection

CRD = Path(__file__).resolve().parents[3] / "manifests" / "base" / "crd.yaml"
LOOPBACK = Address(host="127.0.0.1", port=0)
# Staleness is covered by the unit tests; here it would only fire during long clock moves.
OPTIONS = RunOptions(
    metrics_address=LOOPBACK,
    probe_address=LOOPBACK,
    request_timeout=5.0,
    stale_after=timedelta(hours=6),
    report_address="127.0.0.1:0",
    insecure=True,
)

SpokeFactory = Callable[..., Replica]


# `run` as the shipped spoke's ServiceAccount, bound only by manifests/kubernetes' roles (RBAC on:
# a request those roles do not allow fails the test); the tests' own writes are the admin's.
SPOKE: Final = identity(MANIFESTS / "kubernetes", "addon-status-controller")
SPOKE_TOKEN: Final = "spoke"


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer(
        [CRD], watch_history=200, rbac=True, tokens=tokens_for(**{SPOKE_TOKEN: SPOKE})
    ) as srv:
        yield srv


@pytest.fixture
def api(server: APIServer) -> Iterator[client.ApiClient]:
    with api_client(server, ADMIN_TOKEN) as c:
        yield c


class Addon:
    """The addon CR as another actor sees it: read it, edit its spec or status, its Events."""

    def __init__(self, api: client.ApiClient) -> None:
        self.objects = client.CustomObjectsApi(api)
        self.core = client.CoreV1Api(api)

    def create(self) -> dict[str, Any]:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "ObservabilityAddon",
            "metadata": {"name": NAME},
            "spec": {"enableMetrics": True},
        }
        return _dict(
            self.objects.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, body)
        )

    def get(self) -> dict[str, Any]:
        return _dict(
            self.objects.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
        )

    @property
    def status(self) -> dict[str, Any]:
        return dict(self.get().get("status") or {})

    def change_spec(self, **spec: Any) -> int:
        """Patch the spec; the new generation."""
        obj = _dict(
            self.objects.patch_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, NAME, {"spec": spec}
            )
        )
        return int(obj["metadata"]["generation"])

    def add_foreign_condition(self, type_: str) -> None:
        """Another controller adds a condition of its own (read, append, PUT with the read
        resourceVersion, as a well-behaved writer does)."""
        obj = self.get()
        status = obj.setdefault("status", {})
        status.setdefault("conditions", []).append(
            {
                "type": type_,
                "status": "True",
                "reason": "Checked",
                "message": "someone else's condition",
                "lastTransitionTime": "2025-01-01T00:00:00Z",
            }
        )
        self.objects.replace_namespaced_custom_object_status(
            GROUP, VERSION, NAMESPACE, PLURAL, NAME, obj
        )

    def events(self) -> list[client.CoreV1Event]:
        items: list[client.CoreV1Event] = self.core.list_namespaced_event(NAMESPACE).items
        return items


def _dict(value: object) -> dict[str, Any]:
    assert isinstance(value, dict), value
    return value


@pytest.fixture
def addon(server: APIServer, api: client.ApiClient) -> Addon:
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
    a = Addon(api)
    a.create()
    bind(server, SPOKE)  # and the spoke's ServiceAccount, bound by the shipped roles
    return a


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def spoke(server: APIServer, addon: Addon, clock: FakeClock) -> Iterator[SpokeFactory]:
    """Build and start a replica on the test's CR (on `kube` if given, else over HTTP through
    the project's own connection); every one is stopped at the end."""
    started: list[Replica] = []

    def make(*, kube: Kube | None = None, **kwargs: Any) -> Replica:
        kwargs.setdefault("registry", CollectorRegistry())
        client_ = None if kube is not None else connection(server, SPOKE_TOKEN)
        controller = spoke_replica(OPTIONS, api_client=client_, kube=kube, clock=clock, **kwargs)
        controller.start()
        started.append(controller)
        return controller

    yield make
    for controller in started:
        controller.stop()


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample on the controller's /metrics, by name and sorted labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as answer:
        text = answer.read().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def status_puts(server: APIServer) -> int:
    """Successful PUTs on the addon's status subresource, from the server's audit log."""
    return server.count_requests(verbs=("update",), resource=PLURAL, subresource="status")
