"""The hub side beside OCM's own writers of a ManagedClusterAddOn (docs/spec.md §12.1), for ten
simulated minutes: the addon manager's `Progressing` on every event, the health check's
`Available` (workload probe for the rollout's `addon-status`, the klusterlet's lease for ACM's
`observability-controller`) resynced every 30 s, and in `acm` the observability operator's copy
of the hub copy (controller/demo/ocm_writers.py, as OCM v1.3 writes them). What must hold: the
hub side writes no type it does not own, no condition flaps, and the hub side writes at most
once per visible change of a hub copy."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.demo.ocm_writers import OcmWriters
from controller.hub.metrics import MirrorMetrics
from controller.hub.mirror import OWNED_TYPES, standard_conditions
from controller.hub.ocm import MANAGED_CLUSTER_ADDON as MCA
from controller.hub.side import HubSide, PathSettings
from controller.kube.api import ALL_NAMESPACES, ApiResource, Kube
from controller.kube.backoff import Backoff
from controller.kube.reflector import Reflector, Selection
from controller.kube.rest import RestKube
from tests.hub.hubside import HUB_USER, T1, Hub, acm, hub_server, seed
from tests.support import WAIT, connection, eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SCALE = 60.0  # a simulated minute per second
CLUSTERS = ("cluster1", "cluster2", "cluster3")


class Recorded:
    """The real seam, with every status patch the hub side sends kept to look at."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self.patches: list[Mapping[str, Any]] = []

    def patch_status(
        self, resource: ApiResource, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        self.patches.append(patch)
        return self._kube.patch_status(resource, namespace, name, patch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)


class History:
    """Every value each condition type of each ManagedClusterAddOn took, as a watch saw it."""

    def __init__(self, kube: Kube, name: str) -> None:
        self.values: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._lock = threading.Lock()
        self.reflector = Reflector(
            kube, Selection(MCA, ALL_NAMESPACES, name=name), name="history",
            on_listed=lambda items, version: [self._seen(i) for i in items],
            on_event=lambda event: self._seen(event.object), watch_seconds=60,
        )  # fmt: skip

    def _seen(self, obj: Mapping[str, Any]) -> None:
        namespace = obj["metadata"]["namespace"]
        with self._lock:
            for condition in (obj.get("status") or {}).get("conditions") or []:
                values = self.values.setdefault((namespace, condition["type"]), [])
                value = (condition["status"], condition["reason"])
                if not values or values[-1] != value:
                    values.append(value)

    def of(self, namespace: str, kind: str) -> list[tuple[str, str]]:
        with self._lock:
            return list(self.values.get((namespace, kind), []))


@pytest.fixture(params=["seed", "acm"])
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def hub(profile: str) -> Iterator[Hub]:
    with hub_server(acm=profile == "acm") as made:
        made.addon_name = "addon-status" if profile == "seed" else "observability-controller"
        yield made


def test_ten_simulated_minutes_beside_ocms_writers(hub: Hub, profile: str) -> None:
    shape = seed if profile == "seed" else acm
    healthy = {"true": "Available", "reason": "ForwardSuccessful"}
    for cluster in CLUSTERS:
        hub.cluster(cluster)
        hub.set_copy(cluster, shape(**healthy))
    with connection(hub.server, "hub-a") as api, connection(hub.server, "admin") as ocm_api:
        kube = Recorded(RestKube(api, request_timeout=5.0))
        # acm: OCM's view of the agent is the rollout's own addon, as the shipped acm component
        # says (--agent-addon); the observability operator's mirror copies the hub copy's
        # Available onto observability-controller, which is not OCM's health check
        path = PathSettings(agent_addon="addon-status")
        side = HubSide(
            kube, metrics=MirrorMetrics(CollectorRegistry()), addon_name=hub.addon_name,
            resync_interval=300 / SCALE, backoff=Backoff(0.02, 0.2), watch_seconds=30,
            path=path,
        )  # fmt: skip
        ocm = OcmWriters(RestKube(ocm_api), addon_name=hub.addon_name, acm=profile == "acm",
                         time_scale=SCALE)  # fmt: skip
        history = History(RestKube(ocm_api), hub.addon_name)
        history.reflector.start()
        ocm.start()
        side.start()
        try:
            changes = _play(hub, side, shape)
        finally:
            side.stop()
            ocm.stop()
            history.reflector.stop()
    written = {
        t for patch in kube.patches for t in (c["type"] for c in patch["status"]["conditions"])
    }
    # the whole list goes in a merge patch; what the hub side changed in it is its owned types
    for patch in kube.patches:
        for condition in patch["status"]["conditions"]:
            if condition["type"] not in OWNED_TYPES:
                assert condition["reason"] in {"Completed", "ProbeAvailable",
                    "ManagedClusterAddOnLeaseUpdated", "ForwardSuccessful", "ForwardFailure",
                    "UpdateFailure"}, condition  # fmt: skip
    assert written & set(OWNED_TYPES)
    for cluster in CLUSTERS:
        available, progressing = (
            history.of(cluster, "Available"),
            history.of(cluster, "Progressing"),
        )
        if profile == "seed":  # OCM's own, set once and never flipped by anyone
            assert available == [("True", "ProbeAvailable")], available
            assert progressing == [("False", "Completed")], progressing
        degraded = history.of(cluster, "Degraded")
        assert len(degraded) == 1 + changes.get(cluster, 0), (cluster, degraded)  # no flap
        writes = hub.writes(cluster, user=HUB_USER)
        assert writes <= 1 + changes.get(cluster, 0), (cluster, writes)


def _play(hub: Hub, side: HubSide, shape: Any) -> dict[str, int]:
    """Ten simulated minutes: cluster1 degrades at 2m and recovers at 6m, cluster2 fails its
    update at 4m; cluster3 stays as it is. The visible changes per cluster."""
    started = time.monotonic()

    def at(minute: float) -> None:
        time.sleep(max(started + minute * 60 / SCALE - time.monotonic(), 0.0))

    eventually(lambda: all(hub.conditions(c) for c in CLUSTERS), "the first mirror")
    at(2)
    hub.set_copy("cluster1", shape(true="Degraded", reason="ForwardFailure", at=T1))
    at(4)
    hub.set_copy("cluster2", shape(true="Degraded", reason="UpdateFailure", at=T1))
    at(6)
    hub.set_copy("cluster1", shape(true="Available", reason="ForwardSuccessful",
                                   at="2026-11-24T03:00:00Z"))  # fmt: skip
    at(10)
    assert side.wait_idle(10)
    return {"cluster1": 2, "cluster2": 1}


class LaggingCopies:
    """The real seam, whose watch of the hub copies hands its events over only while `flowing`
    is set: the hub side's watch lagging behind ACM's observability operator's."""

    def __init__(self, kube: Kube) -> None:
        self._kube = kube
        self.flowing = threading.Event()
        self.flowing.set()

    def watch(self, resource: ApiResource, namespace: str, **options: Any) -> Any:
        stream = self._kube.watch(resource, namespace, **options)
        return stream if resource.kind != "ObservabilityAddon" else _Held(stream, self.flowing)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._kube, name)


class _Held:
    def __init__(self, stream: Any, flowing: threading.Event) -> None:
        self._stream, self._flowing = stream, flowing

    def __iter__(self) -> Iterator[Any]:
        for event in self._stream:
            self._flowing.wait(WAIT)
            yield event

    def close(self) -> None:
        self._stream.close()


def test_a_newer_copy_copied_by_acms_operator_first_is_not_written_over_with_the_older() -> None:
    """ACM's operator copies the hub copy's Degraded, with its time, when its watch is ahead of
    the hub side's: the hub side, still holding the older copy, reads the copy before writing
    over that condition, and writes nothing; its watch then brings the copy (docs/spec.md §12.1)."""
    with hub_server(acm=True) as hub:
        hub.addon_name = "observability-controller"
        hub.cluster("cluster1")
        hub.set_copy("cluster1", acm("Degraded", "ForwardFailure"))
        _race(hub)


def _race(hub: Hub) -> None:
    with connection(hub.server, "hub-a") as api:
        kube = LaggingCopies(RestKube(api, request_timeout=5.0))
        side = HubSide(
            kube, metrics=MirrorMetrics(CollectorRegistry()), addon_name=hub.addon_name,
            backoff=Backoff(0.02, 0.2), watch_seconds=30,
        )  # fmt: skip
        history = History(RestKube(api), hub.addon_name)
        history.reflector.start()
        side.start()
        try:
            eventually(lambda: hub.conditions("cluster1") != [], "the first mirror")
            assert side.wait_idle(WAIT)
            written = hub.writes("cluster1", user=HUB_USER)
            kube.flowing.clear()
            recovered = acm("Available", "ForwardSuccessful", at=T1)
            hub.set_copy("cluster1", recovered)
            copied = [c for c in hub.conditions("cluster1") if c["type"] != "Degraded"]
            hub.set_addon_conditions("cluster1", [*copied, recovered[2]])  # as the operator

            def looked() -> bool:
                return _copy_reads(hub) > 0 or hub.writes("cluster1", user=HUB_USER) > written

            def held() -> bool:
                found = side.caches.snapshot("cluster1")
                return found is not None and found.copy == standard_conditions(recovered)

            eventually(looked, "the hub side to look at the operator's write")
            kube.flowing.set()
            eventually(held, "the hub side's watch to bring the newer copy")
            assert side.wait_idle(WAIT)
        finally:
            side.stop()
            history.reflector.stop()
    assert hub.writes("cluster1", user=HUB_USER) == written
    assert history.of("cluster1", "Degraded") == [
        ("True", "ForwardFailure"),
        ("False", "ForwardSuccessful"),
    ]


def _copy_reads(hub: Hub) -> int:
    return hub.server.count_requests(
        resource="observabilityaddons", namespace="cluster1", user=HUB_USER, verbs=("get",)
    )


def test_on_acm_adopted_an_agent_down_is_the_hub_sides_word_alone() -> None:
    """docs/spec.md §12.2 in `acm`, the way that adopts ACM's observability operator (§12.1):
    its placementrule status copy is dropped, so the hub side alone writes `Degraded` on
    `observability-controller`. The agent (the rollout's `addon-status` addon) stops; the hub
    side's `Degraded` says so; once the agent writes again, it says the copy's truth. No flap.
    (With MCO's copy left running, its patch without a resourceVersion, from its cache, wrote
    the older `Degraded` back over the hub side's: the fight §12.1 measured.)"""
    with hub_server(acm=True) as hub:
        hub.addon_name = "observability-controller"
        agent = Hub(hub.server, "addon-status")
        try:
            hub.cluster("cluster1")
            agent.create_addon("cluster1")
            hub.set_copy("cluster1", acm("Available", "ForwardSuccessful"))
            _agent_down_beside_acm(hub, agent)
        finally:
            agent.close()


def _agent_down_beside_acm(hub: Hub, agent: Hub) -> None:
    def degraded() -> tuple[str, str] | None:
        found = next((c for c in hub.conditions("cluster1") if c["type"] == "Degraded"), None)
        return None if found is None else (found["status"], found["reason"])

    long_ago = "2026-11-24T01:30:00Z"  # after the copy last changed (T0), long before now
    down = {"type": "Available", "status": "False", "reason": "ProbeUnavailable",
            "message": "Probe addon unavailable", "lastTransitionTime": long_ago}  # fmt: skip
    with connection(hub.server, "hub-a") as api, connection(hub.server, "admin") as ocm_api:
        side = HubSide(
            RestKube(api, request_timeout=5.0), metrics=MirrorMetrics(CollectorRegistry()),
            addon_name=hub.addon_name, backoff=Backoff(0.02, 0.2), watch_seconds=30,
            path=PathSettings(window=timedelta(seconds=1), agent_addon="addon-status"),
        )  # fmt: skip
        ocm = OcmWriters(RestKube(ocm_api), addon_name=hub.addon_name, acm=True,
                         mco_status=False, time_scale=SCALE)  # fmt: skip
        history = History(RestKube(ocm_api), hub.addon_name)
        history.reflector.start()
        ocm.start()
        side.start()
        try:
            eventually(lambda: degraded() == ("False", "ForwardSuccessful"), "the first mirror")
            agent.set_addon_conditions("cluster1", [down])
            eventually(lambda: degraded() == ("True", "AgentUnavailable"), "the agent down")
            time.sleep(3.0)  # three simulated minutes of OCM's and the operator's writers
            assert side.wait_idle(10) and degraded() == ("True", "AgentUnavailable")
            # the agent back: it writes its copy first, then OCM's probe sees its Deployment
            hub.set_copy("cluster1", acm("Degraded", "ForwardFailure", at=T1))
            eventually(lambda: degraded() == ("True", "ForwardFailure"), "the copy's truth")
            agent.set_addon_conditions("cluster1", [{**down, "status": "True",
                                                     "reason": "ProbeAvailable"}])  # fmt: skip
            assert side.wait_idle(10)
        finally:
            side.stop()
            ocm.stop()
            history.reflector.stop()
    assert history.of("cluster1", "Degraded") == [
        ("False", "ForwardSuccessful"), ("True", "AgentUnavailable"), ("True", "ForwardFailure"),
    ]  # fmt: skip
    assert hub.writes("cluster1", user=HUB_USER) <= 3
