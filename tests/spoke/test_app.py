"""The assembled spoke replica (`controller.spoke.app.Replica`) on the in-memory `Kube`: it
starts, follows the CR through its own watch, serves metrics and probes on their own ports,
and stops every thread it started; a missing CR stops the start and leaves nothing running."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from controller.flags.options import Address, OptionsError
from controller.spoke.app import Replica
from controller.spoke.options import RunOptions
from statemachines.vocabulary import Reason
from tests.clock import FakeClock
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import MC, WAIT, report, settle, spoke_replica

LOOPBACK = Address(host="127.0.0.1", port=0)
OPTIONS = RunOptions(
    metrics_address=LOOPBACK, probe_address=LOOPBACK, report_address="127.0.0.1:0", insecure=True
)


@pytest.fixture
def controller(store: FakeAddonStore, clock: FakeClock) -> Iterator[Replica]:
    before = set(threading.enumerate())
    spoke = spoke_replica(OPTIONS, kube=store.fake, clock=clock)
    spoke.start()
    yield spoke
    spoke.stop()
    deadline = time.monotonic() + WAIT
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not {t.name for t in set(threading.enumerate()) - before}


def fetch(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=WAIT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_reports_reach_the_cr_and_the_metrics(controller: Replica, store: FakeAddonStore) -> None:
    worker = controller.worker
    settle(worker)  # the initial write on its own (else the first report's carries it)
    worker.submit(report(Reason.UPDATE_SUCCESSFUL, None), timeout=WAIT)
    worker.submit(report(Reason.FORWARD_SUCCESSFUL, MC), timeout=WAIT)
    settle(worker)
    assert store.status["collectors"][0]["state"] == "Available"
    code, text = fetch(controller.metrics_server.port, "/metrics")
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert code == 200
    assert (
        samples[("addon_status_collector_state", (("collector", MC), ("state", "Available")))] == 1
    )
    assert samples[("addon_status_status_writes_total", ())] == 3


def test_the_watch_brings_spec_changes_to_the_worker(
    controller: Replica, store: FakeAddonStore
) -> None:
    settle(controller.worker)
    store.change_spec({"interval": 30})
    deadline = time.monotonic() + WAIT
    while store.status["conditions"][0]["observedGeneration"] != 2:
        assert time.monotonic() < deadline, "the generation was not followed"
        time.sleep(0.01)


def test_probes_answer_on_their_own_port(controller: Replica) -> None:
    port = controller.probes.port
    assert port != controller.metrics_server.port
    assert fetch(port, "/healthz") == (200, "ok")
    assert fetch(port, "/readyz") == (200, "ok")
    controller.worker.set_leader(False)  # a follower stays ready: reports retry to the leader
    settle(controller.worker)
    assert fetch(port, "/readyz") == (200, "ok")


def test_healthz_checks_every_part_and_the_processs_own_threads(controller: Replica) -> None:
    code, body = fetch(controller.probes.port, "/healthz?verbose")
    checks = {line[3:].split(" ")[0] for line in body.splitlines() if line.startswith("[+]")}
    assert code == 200
    assert checks == {
        "event-recorder", "worker", "watch", "report-api", "metrics", "probes", "deadlines"
    }  # fmt: skip


def test_a_missing_cr_stops_the_start_and_leaves_nothing_running(clock: FakeClock) -> None:
    before = set(threading.enumerate())
    spoke = spoke_replica(OPTIONS, kube=FakeAddonStore(obj=None).fake, clock=clock)
    with pytest.raises(OptionsError, match=r"the addon CR .* does not exist"):
        spoke.start()
    assert set(threading.enumerate()) - before == set()
