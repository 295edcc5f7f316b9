"""Every labelled series the controller ever exports is there, at zero, from the start: a busy
run (boot, refusals of every rule, a dampening window running out, staleness, a dropped watch
and 410 Gone, repeated Events) adds no series that the first scrape did not have, so `rate()`
and `increase()` see each first count."""

from __future__ import annotations

import pytest

from kubesim import APIServer
from statemachines import VerdictKind
from statemachines.vocabulary import Rule
from tests.clock import FakeClock
from tests.names import R
from tests.spoke.integration.conftest import Addon, SpokeFactory, scrape
from tests.spoke.integration.test_spoke import boot
from tests.spoke.support import MC, UWL, WAIT, report, settle
from tests.support import eventually

pytestmark = pytest.mark.integration


def series(port: int) -> set[tuple[str, tuple[tuple[str, str], ...]]]:
    """The labelled series (unlabelled ones cannot be missing)."""
    return {key for key in scrape(port) if key[1]}


def test_every_labelled_series_is_exported_from_the_start(
    server: APIServer, addon: Addon, spoke: SpokeFactory, clock: FakeClock
) -> None:
    controller = spoke()
    port = controller.metrics_server.port
    at_start = series(port)
    worker = controller.worker

    boot(worker)
    judged = [
        worker.submit(report(R.FORWARD_SUCCESSFUL, MC), timeout=WAIT),  # heartbeat
        worker.submit(report(R.NOT_SUPPORTED, None), timeout=WAIT),  # NoTransition
        worker.submit(report(R.FORWARD_FAILURE, UWL), timeout=WAIT),  # pending
        worker.submit(report(R.UPDATE_FAILURE, MC, generation=1), timeout=WAIT),
        worker.submit(report(R.FORWARD_SUCCESSFUL, MC), timeout=WAIT),  # RequiresForwardFailure
        worker.submit(report(R.UPDATE_SUCCESSFUL, MC, generation=0), timeout=WAIT),  # Outdated
        worker.submit(report(R.UPDATE_SUCCESSFUL, MC, generation=9), timeout=WAIT),  # Future
    ]
    assert {v.kind for v in judged} == set(VerdictKind)
    clock.move(minutes=11)  # the window runs out
    settle(worker)
    clock.move(hours=7)  # staleness
    settle(worker)
    server.drop_watches()
    addon.change_spec(interval="1m")
    eventually(lambda: worker.present, "the watch back")
    for _ in range(2):
        worker.submit(report(R.UPDATE_SUCCESSFUL, MC), timeout=WAIT)
        worker.submit(report(R.UPDATE_FAILURE, MC), timeout=WAIT)
    settle(worker)

    counted = {k for k, v in scrape(port).items() if k[1] and v > 0}
    assert counted - at_start == set()
    assert series(port) - at_start == set()
    rules = {dict(labels).get("rule") for name, labels in counted if "refused" in name}
    assert {r.value for r in Rule} <= rules
    causes = {dict(labels).get("cause") for name, labels in counted if "transitions" in name}
    assert {"report", "dampening window", "staleness"} <= causes


def test_the_addons_conditions_and_readiness_are_series(
    server: APIServer, addon: Addon, spoke: SpokeFactory
) -> None:
    """`addon_status_addon_condition{condition, status}` as kube-state-metrics exports a
    condition (one series per status, 1 for the one it has), read from the worker at the scrape,
    so an alert sees a Degraded addon without reading the CR; `addon_status_ready` is what
    /readyz answers."""
    controller = spoke()
    port = controller.metrics_server.port
    boot(controller.worker)
    controller.worker.submit(report(R.UPDATE_FAILURE, None, message="rollout failed"), timeout=WAIT)
    settle(controller.worker)
    scraped = scrape(port)

    def condition_gauge(name: str) -> dict[str, float]:
        return {
            dict(labels)["status"]: value
            for (metric, labels), value in scraped.items()
            if metric == "addon_status_addon_condition" and dict(labels)["condition"] == name
        }

    assert condition_gauge("Degraded") == {"true": 1.0, "false": 0.0, "unknown": 0.0}
    assert condition_gauge("Available") == {"true": 0.0, "false": 1.0, "unknown": 0.0}
    assert condition_gauge("Ready")["false"] == 1.0
    assert scraped[("addon_status_ready", ())] == 1.0
