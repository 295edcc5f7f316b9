"""The list-and-watch loop on the CR: the list delivered as SYNC, changes in order, a dropped
watch resumed from the last resourceVersion (no re-list), 410 Gone and failed requests answered
by a fresh list, an outage told once when it starts and once when it ends (never per retry), a
missing CR reported once and its creation seen on the watch, and a stop that does not wait."""

from __future__ import annotations

import logging
import queue
import time
from collections.abc import Iterator

import pytest

from controller.kube.api import KubeError, WatchEvent
from controller.ops.backoff import Backoff
from controller.spoke.watch import AddonWatch
from tests.spoke.fakes import FakeAddonStore, addon_object
from tests.spoke.support import WAIT

FAST = Backoff(initial=0.01, maximum=0.05)


class Follower:
    def __init__(self, store: FakeAddonStore) -> None:
        self.events: queue.Queue[WatchEvent] = queue.Queue()
        self.restarts: list[str] = []
        self.connected: list[bool] = []
        self.watch = AddonWatch(
            store,
            self.events.put,
            backoff=FAST,
            on_restart=self.restarts.append,
            on_connected=self.connected.append,
        )

    def next(self) -> WatchEvent:
        return self.events.get(timeout=WAIT)

    def quiet(self) -> bool:
        time.sleep(0.05)
        return self.events.empty()


@pytest.fixture
def follower(store: FakeAddonStore) -> Iterator[Follower]:
    f = Follower(store)
    f.watch.start()
    yield f
    f.watch.stop(WAIT)
    assert not f.watch.alive


def generation(event: WatchEvent) -> int:
    return int(event.object["metadata"]["generation"])


def wait_for_watch(store: FakeAddonStore) -> None:
    deadline = time.monotonic() + WAIT
    while store.open_watches == 0:
        assert time.monotonic() < deadline, "no watch opened"
        time.sleep(0.005)


def test_the_first_read_then_every_change_in_order(
    follower: Follower, store: FakeAddonStore
) -> None:
    assert follower.next().type == "SYNC"
    store.change_spec({"a": 1})
    store.change_spec({"a": 2})
    assert [(e.type, generation(e)) for e in (follower.next(), follower.next())] == [
        ("MODIFIED", 2),
        ("MODIFIED", 3),
    ]


def test_a_dropped_watch_resumes_without_missing_or_repeating(
    follower: Follower, store: FakeAddonStore
) -> None:
    follower.next()
    wait_for_watch(store)
    store.while_disconnected(lambda: store.change_spec({"a": 1}), compact=False)
    event = follower.next()
    assert (event.type, generation(event)) == ("MODIFIED", 2)
    assert follower.quiet()
    assert "ended" in follower.restarts


def test_gone_is_answered_by_a_fresh_list(follower: Follower, store: FakeAddonStore) -> None:
    follower.next()
    wait_for_watch(store)
    # The change is lost with the history; only the fresh read brings it.
    store.while_disconnected(lambda: store.change_spec({"a": 1}), compact=True)
    event = follower.next()
    assert (event.type, generation(event)) == ("SYNC", 2)
    assert "gone" in follower.restarts


def test_a_quiet_cr_older_than_the_compacted_history_is_followed(
    follower: Follower, store: FakeAddonStore
) -> None:
    """The watch resumes from the list's version, not the CR's own: no 410 loop."""
    follower.next()
    wait_for_watch(store)
    store.while_disconnected(lambda: store.others_write(5), compact=True)
    event = follower.next()
    assert (event.type, generation(event)) == ("SYNC", 1)
    store.change_spec({"a": 1})
    assert generation(follower.next()) == 2
    assert follower.restarts.count("gone") == 1


def test_a_failed_request_is_retried_with_backoff_from_a_fresh_list(
    store: FakeAddonStore,
) -> None:
    store.faults["watch"] = [KubeError("500"), KubeError("500")]
    f = Follower(store)
    f.watch.start()
    try:
        assert [f.next().type for _ in range(3)] == ["SYNC", "SYNC", "SYNC"]
        wait_for_watch(store)
        store.change_spec({"a": 1})
        event = f.next()
        assert (event.type, generation(event)) == ("MODIFIED", 2)
        assert f.restarts.count("error") == 2
    finally:
        f.watch.stop(WAIT)


def test_an_outage_is_told_once_when_lost_and_once_when_restored(
    follower: Follower, store: FakeAddonStore, caplog: pytest.LogCaptureFixture
) -> None:
    follower.next()
    wait_for_watch(store)
    caplog.set_level(logging.DEBUG, logger="controller.spoke.watch")
    down = [KubeError("connection refused")] * 4
    store.faults["watch"], store.faults["list"] = down[:1], down[1:]
    store.disconnect()
    event = follower.next()  # the first list that succeeds again
    assert event.type == "SYNC"
    deadline = time.monotonic() + WAIT
    while len(follower.connected) < 3 and time.monotonic() < deadline:
        time.sleep(0.005)

    told = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [(r.levelname, r.getMessage().split(";")[0]) for r in told] == [
        ("WARNING", f"lost the watch on the addon CR {store.ref}"),
        ("INFO", f"the watch on the addon CR {store.ref} is restored"),
    ]
    assert told[0].error == "connection refused"  # type: ignore[attr-defined]
    assert told[1].failedAttempts == 4  # type: ignore[attr-defined]
    retries = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert len(retries) == 3
    assert follower.connected == [True, False, True]


def test_a_bug_in_the_loop_is_told_once_with_its_traceback(
    store: FakeAddonStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.faults["list"] = [ValueError("a bug"), ValueError("a bug")]
    f = Follower(store)
    f.watch.start()
    try:
        assert f.next().type == "SYNC"
    finally:
        f.watch.stop(WAIT)
    failed = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(failed) == 1 and failed[0].exc_info is not None


def test_a_missing_cr_is_reported_once_and_its_creation_seen() -> None:
    store = FakeAddonStore(obj=None)
    f = Follower(store)
    f.watch.start()
    try:
        assert f.next().type == "DELETED"
        assert f.quiet()
        store.create(addon_object())
        assert f.next().type == "ADDED"
    finally:
        f.watch.stop(WAIT)


def test_stop_ends_an_open_watch_at_once(store: FakeAddonStore) -> None:
    f = Follower(store)
    f.watch.start()
    f.next()
    wait_for_watch(store)
    started = time.monotonic()
    f.watch.stop(WAIT)
    assert not f.watch.alive
    assert time.monotonic() - started < 1.0
