"""The one list-then-watch loop (`controller.kube.reflector`), on both sides of the seam:
`FakeKube`, and `RestKube` against kubesim (the project's client over HTTP against a server that
answers as kube-apiserver does). What it must do, as client-go's reflector does:

- list, hand over every object found, then every change in order from the list's
  resourceVersion;
- resume a watch that ended from the last resourceVersion seen, without a list;
- list afresh after 410 Gone (the history moved past it) — and watch from the list's version,
  so an object older than the history is no 410 loop;
- list afresh after a failed request, with backoff, telling `on_failed`;
- tell an outage once when lost and once when restored (logs and `WatchMetrics`);
- survive a bug in a hook; ignore objects of other names when selecting one;
- find a kind by discovery at each list (not served yet: a failed list, retried);
- stop an open watch at once.
"""

from __future__ import annotations

import logging
import queue
import time
from contextlib import AbstractContextManager
from typing import Any

import pytest

from controller.kube.api import (
    ADDON,
    ApiResource,
    KindNotServedError,
    KubeError,
    UnavailableError,
    WatchEvent,
)
from controller.kube.reflector import ObjectKind, Reflector, Selection
from tests.kube.backends import FAST, NAME, NAMESPACE, Backend, FakeBackend, addon, watching
from tests.support import WAIT, eventually


class Recorder:
    """A reflector's hooks and metrics, as queues and lists the test reads."""

    def __init__(self) -> None:
        self.seen: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.failed: list[KubeError] = []
        self.connected: list[bool] = []
        self.restarts: list[str] = []

    def listed(self, items: list[dict[str, Any]], version: str) -> None:
        assert version, "a list hands over the collection's resourceVersion"
        self.seen.put(("LIST", [_name_and_generation(i) for i in items]))

    def event(self, event: WatchEvent) -> None:
        self.seen.put((event.type, _name_and_generation(event.object)))

    def next(self) -> tuple[str, Any]:
        return self.seen.get(timeout=WAIT)

    def quiet(self) -> bool:
        time.sleep(0.1)
        return self.seen.empty()

    # WatchMetrics
    def connected_(self, watch: str, up: bool) -> None:
        self.connected.append(up)

    def restarted(self, watch: str, cause: str) -> None:
        self.restarts.append(cause)


class _Metrics:
    def __init__(self, recorder: Recorder) -> None:
        self._recorder = recorder

    def connected(self, watch: str, up: bool) -> None:
        self._recorder.connected_(watch, up)

    def restarted(self, watch: str, cause: str) -> None:
        self._recorder.restarted(watch, cause)


def _name_and_generation(obj: dict[str, Any]) -> tuple[str, int]:
    meta = obj.get("metadata") or {}
    return str(meta.get("name")), int(meta.get("generation") or 0)


def reflect(
    backend: Backend, recorder: Recorder, selection: Selection | None = None
) -> AbstractContextManager[Reflector]:
    reflector = Reflector(
        backend.kube,
        selection or Selection(ADDON, NAMESPACE, NAME),
        name="test",
        on_listed=recorder.listed,
        on_event=recorder.event,
        on_failed=recorder.failed.append,
        metrics=_Metrics(recorder),
        backoff=FAST,
        watch_seconds=30,
    )
    return _Running(reflector)


class _Running(AbstractContextManager[Reflector]):
    def __init__(self, reflector: Reflector) -> None:
        self.reflector = reflector

    def __enter__(self) -> Reflector:
        self.reflector.start()
        return self.reflector

    def __exit__(self, *exc: object) -> None:
        self.reflector.stop(WAIT)
        assert not self.reflector.alive


def test_the_list_then_every_change_in_order(backend: Backend) -> None:
    recorder = Recorder()
    with reflect(backend, recorder):
        assert recorder.next() == ("LIST", [(NAME, 1)])
        watching(backend)
        backend.change_spec(NAME, a=1)
        backend.change_spec(NAME, a=2)
        assert [recorder.next(), recorder.next()] == [
            ("MODIFIED", (NAME, 2)),
            ("MODIFIED", (NAME, 3)),
        ]


def test_a_dropped_watch_resumes_without_missing_or_repeating(backend: Backend) -> None:
    recorder = Recorder()
    with reflect(backend, recorder):
        recorder.next()
        watching(backend)
        backend.interrupt(lambda: backend.change_spec(NAME, a=1), compact=False)
        assert recorder.next() == ("MODIFIED", (NAME, 2))
        assert recorder.quiet()
        assert "ended" in recorder.restarts and "gone" not in recorder.restarts


def test_gone_is_answered_by_a_fresh_list(backend: Backend) -> None:
    recorder = Recorder()
    with reflect(backend, recorder):
        recorder.next()
        watching(backend)
        # The change is lost with the history; only the fresh list brings it.
        backend.interrupt(lambda: backend.change_spec(NAME, a=1), compact=True)
        assert recorder.next() == ("LIST", [(NAME, 2)])
        assert "gone" in recorder.restarts
        assert not recorder.failed  # a 410 is no failure: the server is there


def test_an_object_older_than_the_compacted_history_is_followed_from_the_lists_version(
    backend: Backend,
) -> None:
    recorder = Recorder()
    with reflect(backend, recorder):
        recorder.next()
        watching(backend)
        backend.interrupt(lambda: backend.put(addon("other")), compact=True)
        assert recorder.next() == ("LIST", [(NAME, 1)])
        watching(backend)
        backend.change_spec(NAME, a=1)
        assert recorder.next() == ("MODIFIED", (NAME, 2))
        assert recorder.restarts.count("gone") == 1


def test_a_failed_request_is_retried_with_backoff_from_a_fresh_list(backend: Backend) -> None:
    recorder = Recorder()
    backend.fail("watch", 2)
    with reflect(backend, recorder):
        assert [recorder.next()[0] for _ in range(3)] == ["LIST", "LIST", "LIST"]
        watching(backend)
        backend.change_spec(NAME, a=1)
        assert recorder.next() == ("MODIFIED", (NAME, 2))
    assert recorder.restarts.count("error") == 2
    assert [type(e) for e in recorder.failed] == [UnavailableError, UnavailableError]


def test_an_outage_is_told_once_lost_and_once_restored(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    caplog.set_level(logging.DEBUG, logger="controller.kube.reflector")
    with reflect(backend, recorder):
        recorder.next()
        watching(backend)
        backend.fail("list", 3)
        backend.fail("watch", 1)
        backend.interrupt(compact=False)
        assert recorder.next()[0] == "LIST"  # the first list that succeeds again
        eventually(lambda: recorder.connected == [True, False, True], "the gauge back up")
    told = [r for r in caplog.records if r.levelno >= logging.INFO]
    assert [(r.levelname, r.getMessage().split(";")[0]) for r in told] == [
        ("WARNING", f"lost the watch on ObservabilityAddon {NAMESPACE}/{NAME}"),
        ("INFO", f"the watch on ObservabilityAddon {NAMESPACE}/{NAME} is restored"),
    ]
    assert told[1].failedAttempts == 4  # type: ignore[attr-defined]
    assert len([r for r in caplog.records if r.levelno == logging.DEBUG]) == 3


def test_a_bug_in_a_hook_is_told_once_with_its_traceback_and_the_loop_goes_on(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    recorder = Recorder()
    calls = 0

    def listed(items: list[dict[str, Any]], version: str) -> None:
        nonlocal calls
        calls += 1
        if calls <= 2:
            raise ValueError("a bug")
        recorder.listed(items, version)

    reflector = Reflector(
        backend.kube, Selection(ADDON, NAMESPACE, NAME), name="test", on_listed=listed,
        on_event=recorder.event, backoff=FAST,
    )  # fmt: skip
    with _Running(reflector):
        assert recorder.next()[0] == "LIST"
    failed = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(failed) == 1 and failed[0].exc_info is not None


def test_objects_of_other_names_are_not_handed_over(backend: Backend) -> None:
    recorder = Recorder()
    backend.put(addon("other"))
    with reflect(backend, recorder):
        assert recorder.next() == ("LIST", [(NAME, 1)])
        watching(backend)
        backend.change_spec("other", a=1)
        backend.change_spec(NAME, a=1)
        assert recorder.next() == ("MODIFIED", (NAME, 2))


def test_every_namespace_and_name_when_none_is_selected(backend: Backend) -> None:
    recorder = Recorder()
    backend.put(addon("other"))
    with reflect(backend, recorder, Selection(ADDON)):
        kind, listed = recorder.next()
        assert (kind, sorted(listed)) == ("LIST", [(NAME, 1), ("other", 1)])


def test_a_kind_not_served_is_a_failed_list_retried(backend: Backend) -> None:
    recorder = Recorder()
    missing = Selection(ObjectKind("example.com/v1", "Widget"), NAMESPACE, "w")
    with reflect(backend, recorder, missing):
        eventually(lambda: len(recorder.failed) >= 2, "two failed lists")
    assert all(isinstance(e, KindNotServedError) for e in recorder.failed)
    assert recorder.seen.empty()


def test_a_kind_is_found_by_discovery_once_served() -> None:
    """Its CRD installed while the loop retries (the fake serves it; kubesim cannot add a
    CRD while it runs)."""
    backend, recorder = FakeBackend(), Recorder()
    widget = ApiResource("example.com", "v1", "widgets", "Widget")
    backend.fake.put(widget, {"metadata": {"name": "w", "namespace": NAMESPACE}})
    selection = Selection(ObjectKind("example.com/v1", "Widget"), NAMESPACE, "w")
    with reflect(backend, recorder, selection):
        eventually(lambda: bool(recorder.failed), "a failed list")
        backend.fake.serve(widget)
        assert recorder.next() == ("LIST", [("w", 1)])


def test_stop_ends_an_open_watch_at_once(backend: Backend) -> None:
    recorder = Recorder()
    reflector = Reflector(
        backend.kube, Selection(ADDON, NAMESPACE, NAME), name="test",
        on_listed=recorder.listed, on_event=recorder.event, watch_seconds=300,
    )  # fmt: skip
    reflector.start()
    recorder.next()
    watching(backend)
    reflector.stop(WAIT)  # well before the server would end the watch (300 s)
    assert not reflector.alive
