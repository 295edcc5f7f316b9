"""Which CR a status write starts from (issue 9, docs/spec.md §4): the newest the worker has seen.
A watch event that comes after the echo of our last write is the CR as stored now, so the
write after a spec change needs neither a read nor a retry; one that comes before that echo
may be older than our write, so the next write reads first. Watch events are delivered by hand,
in the order a watch would deliver them."""

from __future__ import annotations

from controller.kube.api import WatchEvent
from tests.names import R
from tests.spoke.conftest import WorkerFactory
from tests.spoke.fakes import FakeAddonStore
from tests.spoke.support import MC, WAIT, condition_of, report, settle


def test_a_spec_change_after_our_echo_costs_no_read_and_no_conflict(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(worker)
    worker.observe(WatchEvent("MODIFIED", store.get()))  # the echo of our write
    reads, writes = store.gets, len(store.puts)
    worker.observe(WatchEvent("MODIFIED", store.change_spec({"retention": "7d"})))
    settle(worker)
    assert len(store.puts) == writes + 1 and store.conflicts == 0
    assert store.gets == reads  # no read: the event is the CR as stored
    assert condition_of(store.status, "Progressing")["observedGeneration"] == 2


def test_a_change_before_our_echo_is_read_again_and_costs_no_conflict(
    make_worker: WorkerFactory, store: FakeAddonStore
) -> None:
    worker = make_worker()
    worker.submit(report(R.FORWARD_SUCCESSFUL, MC, message="sent"), timeout=WAIT)
    settle(worker)  # our write's echo is still on its way
    reads = store.gets
    worker.observe(WatchEvent("MODIFIED", store.change_spec({"retention": "7d"})))
    settle(worker)
    assert store.conflicts == 0 and store.gets == reads + 1  # one read by the worker
    assert condition_of(store.status, "Progressing")["observedGeneration"] == 2
