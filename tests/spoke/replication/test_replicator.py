"""The replication thread against the in-memory hub (docs/spec.md §7): a
status reaches the hub; a burst coalesces into few writes, the last one the newest and never
an older one after a newer; publishing never waits for the hub; nothing is written when the
copy is current; a 409 is retried with a fresh read; a missing hub CR is not created unless
asked; 401/403 reload the credentials; `Retry-After` delays the next attempt; the resync
repairs a copy someone else changed; the metrics count what happened.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.api import ADDON, ErrorKind
from controller.ops.leader import SystemClock
from controller.spoke.metrics import ReplicationMetrics
from controller.spoke.replication import HubReplicator
from tests.clock import FakeClock
from tests.spoke.replication.fakes import NAME, NAMESPACE, FakeHub, FakeSource
from tests.support import eventually

Factory = Callable[..., HubReplicator]


def status(n: int, *, collectors: bool = False) -> dict[str, Any]:
    """A distinct spoke status per `n`."""
    out: dict[str, Any] = {
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "ForwardSuccessful",
                "message": f"status #{n}",
                "lastTransitionTime": "2025-03-01T12:00:00Z",
            }
        ]
    }
    if collectors:
        out["collectors"] = [{"name": "metrics-collector", "state": "Available"}]
    return out


def message(hub_status: dict[str, Any] | None) -> str | None:
    return hub_status["conditions"][0]["message"] if hub_status else None


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def hub() -> FakeHub:
    fake = FakeHub()
    fake.add()
    return fake


@pytest.fixture
def replicator(hub: FakeHub, registry: CollectorRegistry) -> Iterator[Factory]:
    started: list[HubReplicator] = []

    def make(source: FakeSource | None = None, **options: Any) -> HubReplicator:
        settings: dict[str, Any] = {
            "namespace": NAMESPACE,
            "name": NAME,
            "clock": SystemClock(),
            "metrics": ReplicationMetrics(registry),
            "backoff_base": 0.01,
            "backoff_max": 0.05,
            "kube": lambda client: client,
            **options,
        }
        made = HubReplicator(source or FakeSource(hub), **settings)
        made.start()
        started.append(made)
        return made

    yield make
    hub.gate.set()
    for made in started:
        assert made.stop(timeout=5), "the replication thread did not stop"


def metric(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0


def test_a_published_status_reaches_the_hub(hub: FakeHub, replicator: Factory) -> None:
    rep = replicator()
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert hub.status() == status(1)
    assert rep.last_synced_sequence == 1


def test_a_burst_coalesces_and_the_last_write_is_the_newest(
    hub: FakeHub, replicator: Factory
) -> None:
    hub.delay = 0.02  # a slow hub
    rep = replicator()
    for n in range(1, 101):
        rep.publish(status(n))
    assert rep.wait_synced(10)
    numbers = [int(message(w).split("#")[1]) for w in hub.written]  # type: ignore[union-attr]
    assert len(numbers) <= 10, numbers
    assert numbers[-1] == 100
    assert numbers == sorted(numbers), "an older status was written after a newer one"


def test_publish_never_waits_for_the_hub(hub: FakeHub, replicator: Factory) -> None:
    rep = replicator()
    hub.gate.clear()  # the hub holds every call
    rep.publish(status(1))
    eventually(lambda: len(hub.ops("get")) == 1, what="the replicator to call the hub")
    done = threading.Event()

    def burst() -> None:
        for n in range(2, 502):
            rep.publish(status(n))
        done.set()

    threading.Thread(target=burst, daemon=True).start()
    assert done.wait(5), "publish blocked while the hub call was pending"
    hub.gate.set()
    assert rep.wait_synced(5)
    assert message(hub.status()) == "status #501"


def test_nothing_is_written_when_the_hub_copy_is_current(
    hub: FakeHub, replicator: Factory, registry: CollectorRegistry
) -> None:
    hub.tamper(status(1))
    rep = replicator()
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert hub.written == []
    assert metric(registry, "addon_status_hub_unchanged_total") == 1


def test_a_conflict_is_retried_with_a_fresh_read_at_once(
    hub: FakeHub, replicator: Factory, registry: CollectorRegistry
) -> None:
    hub.fail("replace_status", ErrorKind.CONFLICT, times=2)
    rep = replicator(backoff_base=30.0, backoff_max=30.0)  # a backoff would time the test out
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert hub.status() == status(1)
    assert len(hub.ops("get")) == 3
    assert metric(registry, "addon_status_hub_errors_total", kind="conflict") == 2


def test_a_real_conflict_from_a_concurrent_writer(hub: FakeHub, replicator: Factory) -> None:
    """The hub copy changes between our read and our write: the resourceVersion catches it."""
    tampered: list[bool] = []

    def someone_writes() -> None:
        if not tampered:
            tampered.append(True)
            hub.tamper({"conditions": [], "other": "writer"})

    hub.before["replace_status"] = someone_writes
    rep = replicator()
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert hub.status() == {**status(1), "other": "writer"}  # conditions mode keeps theirs


def test_a_missing_hub_copy_is_not_created(
    replicator: Factory, registry: CollectorRegistry
) -> None:
    empty = FakeHub()
    rep = replicator(FakeSource(empty))
    rep.publish(status(1))
    eventually(
        lambda: metric(registry, "addon_status_hub_errors_total", kind="not_found") >= 2,
        what="404s to be retried",
    )
    assert empty.created == []
    assert rep.last_synced_sequence == 0
    empty.add()  # the hub registers the cluster: replication catches up by itself
    assert rep.wait_synced(5)
    assert message(empty.status()) == "status #1"


def test_a_missing_hub_copy_is_created_when_asked(replicator: Factory) -> None:
    empty = FakeHub()
    rep = replicator(FakeSource(empty), create_missing=True)
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert empty.created == [(NAMESPACE, NAME)]
    assert message(empty.status()) == "status #1"


@pytest.mark.parametrize("kind", [ErrorKind.UNAUTHORIZED, ErrorKind.FORBIDDEN])
@pytest.mark.parametrize("reload_succeeds", [True, False])
def test_auth_errors_reload_the_credentials(
    hub: FakeHub, replicator: Factory, kind: ErrorKind, reload_succeeds: bool
) -> None:
    source = FakeSource(hub, reload_succeeds=reload_succeeds)
    hub.fail("get", kind, times=2)
    rep = replicator(source)
    rep.publish(status(1))
    assert rep.wait_synced(5)  # a failed reload keeps the old client, which works again
    assert source.reloads == 2
    assert hub.status() == status(1)


class _BrokenReloadSource(FakeSource):
    """A source whose reload fails in an unexpected way (a bug, an odd file)."""

    def reload(self) -> bool:
        self.reloads += 1
        raise RuntimeError("boom")


def test_a_failing_reload_does_not_end_replication(hub: FakeHub, replicator: Factory) -> None:
    source = _BrokenReloadSource(hub)
    hub.fail("get", ErrorKind.UNAUTHORIZED)
    rep = replicator(source)
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert source.reloads == 1
    assert hub.status() == status(1)


def test_other_errors_do_not_reload_the_credentials(hub: FakeHub, replicator: Factory) -> None:
    source = FakeSource(hub)
    hub.fail("replace_status", ErrorKind.UNAVAILABLE, times=3)
    rep = replicator(source)
    rep.publish(status(1))
    assert rep.wait_synced(5)
    assert source.reloads == 0


def test_retry_after_delays_the_next_attempt(hub: FakeHub, replicator: Factory) -> None:
    hub.fail("get", ErrorKind.THROTTLED, retry_after=0.3)
    rep = replicator()
    rep.publish(status(1))
    assert rep.wait_synced(5)
    first, second = hub.ops("get")[:2]
    assert second.at - first.at >= 0.3


def test_a_publish_does_not_cut_a_backoff_short(hub: FakeHub, replicator: Factory) -> None:
    hub.fail("get", ErrorKind.UNAVAILABLE, retry_after=0.3)
    rep = replicator()
    rep.publish(status(1))
    eventually(lambda: len(hub.ops("get")) == 1, what="the first attempt")
    for n in range(2, 20):
        rep.publish(status(n))
    assert rep.wait_synced(5)
    first, second = hub.ops("get")[:2]
    assert second.at - first.at >= 0.3
    assert [message(w) for w in hub.written] == ["status #19"]


def test_the_resync_repairs_a_hub_copy_someone_else_changed(
    hub: FakeHub, replicator: Factory
) -> None:
    rep = replicator(resync_interval=0.1)
    rep.publish(status(1))
    assert rep.wait_synced(5)
    hub.tamper(status(666))
    eventually(lambda: hub.status() == status(1), what="the resync to repair the copy")
    assert len(hub.written) == 2


def test_the_resync_counts_from_the_last_sync(hub: FakeHub, replicator: Factory) -> None:
    """A sync at 60 s moves the resync to 160 s: the one due at 100 s by the first sync is
    not made (the work queue keeps the earlier of two times; the replicator waits again)."""
    clock = FakeClock()
    rep = replicator(clock=clock, resync_interval=100.0)
    rep.publish(status(1))
    assert rep.wait_synced(5)
    clock.move(seconds=60)
    rep.publish(status(2))
    assert rep.wait_synced(5)
    reads = len(hub.ops("get"))
    clock.move(seconds=41)  # 101 s after the first sync, 41 s after the last
    assert rep.loop.queue.wait_idle(5)  # the key due at 100 s came out, and went back
    assert len(hub.ops("get")) == reads
    clock.move(seconds=60)
    rep.loop.queue.wake()
    eventually(lambda: len(hub.ops("get")) == reads + 1, what="the resync 100 s after the last")


def test_a_hub_that_prunes_fields_is_not_rewritten_on_every_resync(
    replicator: Factory, registry: CollectorRegistry
) -> None:
    pruning = FakeHub(prune=frozenset({"collectors"}))
    pruning.add()
    rep = replicator(FakeSource(pruning), copy="status", resync_interval=0.02)
    rep.publish(status(1, collectors=True))
    assert rep.wait_synced(5)
    eventually(
        lambda: metric(registry, "addon_status_hub_unchanged_total") >= 5, what="several resyncs"
    )
    assert len(pruning.written) == 1


def test_status_mode_copies_the_status_but_never_the_bookkeeping(
    hub: FakeHub, replicator: Factory
) -> None:
    hub.tamper({"conditions": [], "hubOnly": True})
    rep = replicator(copy="status")
    history = [{"type": "Available", "reason": "ForwardSuccessful", "message": "m",
                "lastTransitionTime": "2025-03-01T12:00:00Z"}]  # fmt: skip
    rep.publish({**status(1, collectors=True), "history": history})
    assert rep.wait_synced(5)
    assert hub.status() == {**status(1), "history": history}


def test_metrics_count_writes_errors_and_lag(
    hub: FakeHub, replicator: Factory, registry: CollectorRegistry
) -> None:
    hub.fail("get", ErrorKind.NETWORK)
    rep = replicator()
    rep.publish(status(1))
    assert rep.wait_synced(5)
    rep.publish(status(2))
    assert rep.wait_synced(5)
    assert metric(registry, "addon_status_hub_writes_total") == 2
    assert metric(registry, "addon_status_hub_errors_total", kind="network") == 1
    assert metric(registry, "addon_status_hub_replication_lag_seconds_count") == 2
    since = metric(registry, "addon_status_hub_seconds_since_last_sync")
    assert 0.0 <= since < 5.0


def test_stop_returns_promptly_while_idle(hub: FakeHub, registry: CollectorRegistry) -> None:
    rep = HubReplicator(
        FakeSource(hub),
        namespace=NAMESPACE,
        clock=SystemClock(),
        metrics=ReplicationMetrics(registry),
        kube=lambda client: client,
    )
    rep.start()
    assert rep.stop(timeout=5)  # its idle wait is longer: stop woke it


def test_a_stop_between_read_and_write_writes_nothing(hub: FakeHub, replicator: Factory) -> None:
    """A replica that lost leadership stops replicating: a sync in flight does not write."""
    rep = replicator()
    hub.gate.clear()
    rep.publish(status(1))
    eventually(lambda: len(hub.ops("get")) == 1, what="a sync to be in flight")
    opener = threading.Timer(0.05, hub.gate.set)  # the hub answers the read after stop()
    opener.start()
    assert rep.stop(timeout=5)
    opener.join()
    assert hub.written == []
    assert hub.ops("replace_status") == []


def test_an_unknown_copy_mode_is_refused(hub: FakeHub, registry: CollectorRegistry) -> None:
    with pytest.raises(ValueError, match="copy must be"):
        HubReplicator(
            FakeSource(hub),
            namespace=NAMESPACE,
            copy="spec",  # type: ignore[arg-type]
            clock=SystemClock(),
            metrics=ReplicationMetrics(registry),
        )


def test_a_copy_another_writer_wrote_lately_is_told_and_not_repaired(
    hub: FakeHub, replicator: Factory, caplog: pytest.LogCaptureFixture
) -> None:
    """docs/spec.md §12.1: ACM's endpoint operator left running writes the hub copy too; its
    field manager is in the copy's managedFields (as kube-apiserver records a status update).
    The resync leaves its write and says so once; the controller's next status is written."""
    rep = replicator(resync_interval=0.1)
    rep.publish(status(1))
    assert rep.wait_synced(5)
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    entry = {"manager": "endpoint-monitoring-operator", "operation": "Update",
             "subresource": "status", "time": now, "fieldsV1": {"f:status": {}}}  # fmt: skip

    def mco_writes(obj: dict[str, Any]) -> None:
        obj["status"] = status(666)
        obj["metadata"]["managedFields"] = [entry]

    with caplog.at_level(logging.WARNING, logger="controller.spoke.replication"):
        hub.edit(ADDON, NAMESPACE, NAME, mco_writes)
        reads = len(hub.ops("get"))
        eventually(lambda: len(hub.ops("get")) >= reads + 3, what="three resyncs")
        assert hub.status() == status(666)
        rep.publish(status(2))
        eventually(lambda: hub.status() == status(2), what="the next status written")
    told = [r for r in caplog.records if "endpoint-monitoring-operator" in r.getMessage()]
    assert len(told) == 1
