"""The spoke controller end to end: reports judged by the worker, the status written through the
real `kubernetes` client to the embedded API server (one PUT per change, none for heartbeats
and refusals, counted in the server's audit log), dampening on an injected clock across a
restart, a real 409 from a racing writer, a dropped watch and a 410 Gone while the spec
generation moves, versions, history and the last known good generation across a restart, Events
on the CR, metrics and probes on their own ports."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from kubernetes import client

from controller.flags.options import OptionsError
from controller.kube.api import ApiResource
from controller.kube.connection import Connection
from controller.kube.rest import RestKube
from controller.spoke.addon import GROUP, PLURAL, VERSION
from controller.spoke.status_writer import owned_types
from kubesim import APIServer, RequestInfo
from statemachines import VerdictKind
from statemachines.vocabulary import SEED
from tests.clock import FakeClock
from tests.names import R
from tests.spoke.fakes import NAME, NAMESPACE
from tests.spoke.integration.conftest import (
    OPTIONS,
    SPOKE_TOKEN,
    Addon,
    SpokeFactory,
    scrape,
    status_puts,
)
from tests.spoke.support import (
    MC,
    UWL,
    WAIT,
    boot,
    collector,
    condition_of,
    report,
    settle,
    spoke_replica,
    true_type,
)
from tests.support import connection, eventually

pytestmark = pytest.mark.integration


def generations(addon: Addon) -> set[int]:
    """The generations our conditions say they were computed for."""
    owned = owned_types(SEED)
    return {c["observedGeneration"] for c in addon.status["conditions"] if c["type"] in owned}


def test_boot_sequence_one_write_per_change_none_for_heartbeats_or_refusals(
    server: APIServer, addon: Addon, spoke: SpokeFactory
) -> None:
    worker = spoke().worker
    settle(worker)
    assert status_puts(server) == 1  # the initial Progressing (NoReportYet)
    boot(worker)
    assert status_puts(server) == 4
    status = addon.status
    assert true_type(status) == "Available"
    assert condition_of(status, "UwlMetricsCollectorStatus")["reason"] == "ForwardSuccessful"

    assert worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT).kind is (
        VerdictKind.HEARTBEAT
    )
    assert worker.submit(report(R.NOT_SUPPORTED, None), timeout=WAIT).kind is VerdictKind.REFUSED
    settle(worker)
    assert status_puts(server) == 4


def test_update_failure_blocks_available(addon: Addon, spoke: SpokeFactory) -> None:
    worker = spoke().worker
    boot(worker)
    worker.submit(report(R.UPDATE_FAILURE, None, message="rollout failed"), timeout=WAIT)
    refused = worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(worker)
    assert refused.kind is VerdictKind.REFUSED
    assert true_type(addon.status) == "Degraded"
    assert condition_of(addon.status, "Degraded")["reason"] == "UpdateFailure"


def test_a_flap_is_dampened_and_an_outage_degrades_at_the_deadline(
    server: APIServer, addon: Addon, spoke: SpokeFactory, clock: FakeClock
) -> None:
    worker = spoke().worker
    boot(worker)
    available_since = condition_of(addon.status, "Available")["lastTransitionTime"]
    writes = status_puts(server)

    clock.move(minutes=1)
    worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    clock.move(minutes=2)
    worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(worker)
    # The window was opened and closed on the CR (status.collectors); no condition moved.
    assert status_puts(server) == writes + 2
    assert condition_of(addon.status, "Available")["lastTransitionTime"] == available_since

    clock.move(minutes=2)  # 12:05
    worker.submit(report(R.FORWARD_FAILURE, MC, message="503 again"), timeout=WAIT)
    clock.move(minutes=9, seconds=59)
    settle(worker)
    assert true_type(addon.status) == "Available"
    clock.move(seconds=1)
    settle(worker)
    mc = condition_of(addon.status, "MetricsCollectorStatus")
    assert true_type(addon.status) == "Degraded"
    assert (mc["lastTransitionTime"], mc["message"]) == ("2025-01-01T12:15:00Z", "503 again")


def test_a_restart_inside_a_dampening_window_fires_it_on_time(
    addon: Addon, spoke: SpokeFactory, clock: FakeClock
) -> None:
    first = spoke()
    boot(first.worker)
    clock.move(minutes=1)
    first.worker.submit(report(R.FORWARD_FAILURE, MC, message="503"), timeout=WAIT)
    settle(first.worker)
    first.stop()
    assert collector(addon.status, MC)["pendingReason"] == "ForwardFailure"

    clock.move(minutes=5)
    second = spoke()
    settle(second.worker)
    assert true_type(addon.status) == "Available"
    clock.move(minutes=5)
    settle(second.worker)
    assert true_type(addon.status) == "Degraded"
    assert condition_of(addon.status, "MetricsCollectorStatus")["lastTransitionTime"] == (
        "2025-01-01T12:11:00Z"
    )


def test_a_restart_in_the_middle_of_an_update_keeps_versions_history_and_last_known_good(
    addon: Addon, spoke: SpokeFactory, clock: FakeClock
) -> None:
    first = spoke()
    for r in (
        report(R.UPDATE_SUCCESSFUL, None, version="2.14.0"),
        report(R.FORWARD_SUCCESSFUL, MC),
        report(R.FORWARD_SUCCESSFUL, UWL),
    ):
        first.worker.submit(r, timeout=WAIT)
    clock.move(minutes=1)
    first.worker.submit(report(R.UPDATE_SUCCESSFUL, MC, version="2.15.0"), timeout=WAIT)
    settle(first.worker)
    first.stop()
    before = addon.status
    assert before["versions"] == [
        {"name": MC, "version": "2.14.0"},
        {"name": UWL, "version": "2.14.0"},
    ]
    assert "updating 2.14.0 -> 2.15.0" in condition_of(before, "Progressing")["message"]

    clock.move(minutes=1)
    second = spoke()
    settle(second.worker)
    assert addon.status == before  # read back exactly: nothing to write
    second.worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(second.worker)
    after = addon.status
    assert after["versions"][0] == {"name": MC, "version": "2.15.0"}
    assert after["history"][1:] == before["history"]
    assert after["lastKnownGood"] == before["lastKnownGood"]


class RacedKube(RestKube):
    """The real client, except that once, between the writer's read and its PUT, someone
    else writes the CR."""

    def __init__(self, api: Connection, race: Callable[[], None]) -> None:
        super().__init__(api, request_timeout=5.0)
        self._race: Callable[[], None] | None = race

    def replace_status(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        race, self._race = self._race, None
        if race is not None:
            race()
        return super().replace_status(resource, namespace, name, body)


def test_a_writer_racing_between_read_and_write_loses_nothing(
    server: APIServer, api: client.ApiClient, addon: Addon, spoke: SpokeFactory
) -> None:
    def race() -> None:
        addon.add_foreign_condition("ExternalCheck")
        addon.change_spec(retention="7d")

    controller = spoke(kube=RacedKube(connection(server, SPOKE_TOKEN), race))
    settle(controller.worker)  # the initial write met the race: 409, fresh read, write again
    eventually(lambda: generations(addon) == {2}, "the conditions to follow generation 2")
    worker = controller.worker
    worker.submit(report(R.UPDATE_FAILURE, None, message="broken"), timeout=WAIT)
    settle(worker)

    types = [c["type"] for c in addon.status["conditions"]]
    assert types[0] == "ExternalCheck" and types.count("ExternalCheck") == 1
    assert true_type(addon.status) == "Degraded"
    failed = server.count_requests(verbs=("update",), subresource="status", successful=False)
    assert failed - status_puts(server) == 1  # exactly one 409
    registry = controller.registry
    assert registry.get_sample_value("addon_status_status_write_conflicts_total") == 1


def bump_spec(server: APIServer, **spec: Any) -> None:
    """Another writer edits the CR in storage directly (no watch is open at that moment)."""
    obj = server.get_object(GROUP, VERSION, PLURAL, NAMESPACE, NAME)
    assert obj is not None
    obj["spec"].update(spec)
    obj["metadata"]["generation"] += 1
    server.put_object(GROUP, VERSION, PLURAL, obj)


def test_a_dropped_watch_and_410_gone_do_not_lose_the_spec_generation(
    server: APIServer, addon: Addon, spoke: SpokeFactory
) -> None:
    controller = spoke()
    settle(controller.worker)

    server.drop_watches()
    generation = addon.change_spec(interval="1m")
    eventually(lambda: generations(addon) == {generation}, "generation after a dropped watch")

    compacted = False

    def when_the_watch_returns(info: RequestInfo) -> bool:
        """Before the controller's next watch is served: the spec moves, the history goes."""
        nonlocal compacted
        if info.verb == "watch" and not compacted:
            compacted = True
            bump_spec(server, interval="2m")
            server.compact()
        return False

    server.faults.delay(0.001, match=when_the_watch_returns)
    server.drop_watches()
    eventually(lambda: generations(addon) == {generation + 1}, "generation after 410 Gone")
    gone = controller.registry.get_sample_value(
        "addon_status_watch_restarts_total", {"watch": "addon", "cause": "gone"}
    )
    assert gone == 1


def test_a_report_of_an_outdated_generation_is_refused(
    server: APIServer, addon: Addon, spoke: SpokeFactory
) -> None:
    worker = spoke().worker
    boot(worker)
    addon.change_spec(interval="1m")
    generation = addon.change_spec(interval="2m")
    eventually(lambda: generations(addon) == {generation}, "the conditions to follow the spec")
    assert generation == 3
    worker.submit(report(R.UPDATE_SUCCESSFUL, None, generation=3), timeout=WAIT)
    settle(worker)
    writes = status_puts(server)
    verdict = worker.submit(report(R.UPDATE_FAILURE, None, generation=2), timeout=WAIT)
    settle(worker)
    assert (verdict.kind, verdict.rule) == (VerdictKind.REFUSED, "OutdatedGeneration")
    assert status_puts(server) == writes


def test_changes_are_recorded_as_events_on_the_cr(addon: Addon, spoke: SpokeFactory) -> None:
    boot(spoke().worker)
    uid = addon.get()["metadata"]["uid"]

    def reasons() -> list[str]:
        return [str(e.reason) for e in addon.events() if e.involved_object.uid == uid]

    eventually(lambda: len(reasons()) == 5, "four collector moves and one addon change")
    assert sorted(set(reasons())) == ["AddonStatusChanged", "CollectorStateChanged"]
    changed = next(e for e in addon.events() if e.reason == "AddonStatusChanged")
    assert str(changed.message).startswith("Progressing (UpdateSuccessful) -> Available")
    assert changed.involved_object.kind == "ObservabilityAddon"


def test_repeated_moves_raise_the_count_of_one_event(addon: Addon, spoke: SpokeFactory) -> None:
    """client-go's recorder: a move seen before patches its Event (count, lastTimestamp) instead
    of creating another."""
    controller = spoke()
    boot(controller.worker)
    for _ in range(3):
        for reason in (R.UPDATE_FAILURE, R.UPDATE_SUCCESSFUL, R.FORWARD_SUCCESSFUL):
            verdict = controller.worker.submit(report(reason, MC), timeout=WAIT)
            assert verdict.kind is VerdictKind.ACCEPTED
    settle(controller.worker)

    def counts() -> dict[str, int]:
        return {str(e.message): int(e.count) for e in addon.events()}

    moves = 2 + 9  # the boot moves metrics-collector twice, then three cycles of three
    events = controller.registry.get_sample_value
    eventually(
        lambda: (
            (events("addon_status_kube_events_total", {"outcome": "aggregated"}) or 0)
            + (events("addon_status_kube_events_total", {"outcome": "recorded"}) or 0)
            == 4 + 9 + 1 + 9
        ),  # all collectors' moves; the addon's: one in the boot, three per cycle
        "every Event sent",
    )
    cycle = [m for m in counts() if m.startswith(f"{MC}: ") and "(by report)" in m]
    assert sum(counts()[m] for m in cycle) == moves
    # The boot's last move (Progressing -> Available) is also each cycle's last.
    assert sorted(counts()[m] for m in cycle) == [1, 3, 3, 4]
    degraded = next(e for e in addon.events() if "-> Degraded (UpdateFailure)" in str(e.message))
    assert degraded.first_timestamp <= degraded.last_timestamp
    assert len(addon.events()) == len(counts())  # one Event per distinct message


def test_metrics_are_exposed_on_their_own_port(server: APIServer, spoke: SpokeFactory) -> None:
    controller = spoke()
    settle(controller.worker)  # the initial write on its own (else the first report's carries it)
    boot(controller.worker)
    controller.worker.submit(report(R.NOT_SUPPORTED, None), timeout=WAIT)
    settle(controller.worker)
    samples = scrape(controller.metrics_server.port)

    def one(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert one("addon_status_collector_state", collector=UWL, state="Available") == 1
    assert one("addon_status_collector_state", collector=UWL, state="Degraded") == 0
    moved = {"collector": UWL, "from": "Progressing", "to": "Available", "cause": "report"}
    assert one("addon_status_collector_transitions_total", **moved) == 1
    refused = {"collector": "all", "reason": "NotSupported", "rule": "NoTransition"}
    assert one("addon_status_reports_refused_total", **refused) == 1
    assert one("addon_status_status_writes_total") == status_puts(server) == 4
    assert one("addon_status_status_write_conflicts_total") == 0
    assert one("addon_status_reconcile_duration_seconds_count", trigger="report") == 4
    assert one("addon_status_queue_depth") == 0
    assert one("addon_status_leader") == 1


def probe(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=WAIT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_probes_follow_the_cr(server: APIServer, addon: Addon, spoke: SpokeFactory) -> None:
    controller = spoke()
    port = controller.probes.port
    assert probe(port, "/healthz") == (200, "ok")
    eventually(lambda: probe(port, "/readyz") == (200, "ok"), "ready")

    addon.objects.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
    eventually(lambda: probe(port, "/readyz")[0] == 503, "not ready without the CR")
    assert "[-]addon failed" in probe(port, "/readyz")[1]
    assert probe(port, "/healthz")[0] == 200

    addon.create()
    eventually(lambda: probe(port, "/readyz")[0] == 200, "ready again")
    eventually(lambda: true_type(addon.status) == "Progressing", "the new CR's status")


def test_start_without_the_cr_fails_and_leaves_nothing(
    server: APIServer, addon: Addon, clock: FakeClock
) -> None:
    addon.objects.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
    controller = spoke_replica(OPTIONS, api_client=connection(server, SPOKE_TOKEN), clock=clock)
    with pytest.raises(OptionsError, match="does not exist"):
        controller.start()
    assert not controller.worker.alive and not controller.watch.alive
