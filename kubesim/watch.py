"""One watch stream, as kube-apiserver's cacher serves it: the changes of one resource turned
into ADDED / MODIFIED / DELETED events through the request's selectors (an object that stops
matching is DELETED, one that starts matching is ADDED), BOOKMARKs when asked for, and an end
on timeoutSeconds, on server stop (clean) or on a dropped connection (abrupt)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

from kubesim.codec import encode_json
from kubesim.reads import ReadRegistry, WatchPlan
from kubesim.store import Change, Store

__all__ = ["INITIAL_EVENTS_END", "serve_watch"]

INITIAL_EVENTS_END: Final = "k8s.io/initial-events-end"
_PRE_TIMEOUT_BOOKMARK: Final = 2.0  # kube-apiserver bookmarks 2 s before a watch times out

Obj = dict[str, Any]
Write = Callable[[bytes], None]


def _event(kind: str, obj: Obj, sort_keys: bool) -> bytes:
    """watch.Event is a struct (type, then object); only the object's maps may be sorted."""
    return (
        b'{"type":"'
        + kind.encode()
        + b'","object":'
        + encode_json(obj, sort_keys=sort_keys).rstrip(b"\n")
        + b"}\n"
    )


def classify(plan: WatchPlan, change: Change) -> tuple[str, Obj] | None:
    """The event this change is for this watch, if any."""
    now_matches = change.type != "DELETED" and plan.matches(change.object)
    was_matching = plan.matches(change.previous)
    if now_matches:
        return ("MODIFIED" if was_matching else "ADDED"), change.object
    if was_matching:
        assert change.previous is not None
        gone = dict(change.previous)
        gone["metadata"] = {
            **change.previous["metadata"],
            "resourceVersion": change.object["metadata"]["resourceVersion"],
        }
        return "DELETED", gone
    return None


def serve_watch(
    plan: WatchPlan, registry: ReadRegistry, store: Store, write: Write, *, bookmark_interval: float
) -> str:
    """Stream until the watch ends; returns how: timeout, stopped, dropped or client (the
    client went away). `write` sends one event; it raises OSError when the client is gone."""
    rt, version = plan.rt, plan.version
    sort_keys = rt.strategy.unstructured
    api_version, kind = rt.api_version(version), rt.kind
    if plan.error is not None:
        write(_event("ERROR", plan.error.status(), False))
        return "timeout"
    watcher = plan.watcher
    assert watcher is not None
    deadline = time.monotonic() + plan.timeout

    def bookmark_due_after(moment: float) -> float:
        """Every `bookmark_interval`, and once 2 s before the deadline."""
        due = moment + bookmark_interval
        if deadline - _PRE_TIMEOUT_BOOKMARK > moment:
            due = min(due, deadline - _PRE_TIMEOUT_BOOKMARK)
        return due

    next_bookmark = bookmark_due_after(time.monotonic())
    initial_left = plan.initial_events

    def bookmark(rv: int, annotate: bool = False) -> None:
        obj = rt.strategy.bookmark(api_version, kind, rv)
        if annotate:
            obj["metadata"]["annotations"] = {INITIAL_EVENTS_END: "true"}
        write(_event("BOOKMARK", obj, sort_keys))

    try:
        while True:
            if initial_left == 0:
                bookmark(plan.start_rv, annotate=True)
                initial_left = -1
            current = time.monotonic()
            if current >= deadline:
                return "timeout"
            wake = min(deadline, next_bookmark) if plan.bookmarks else deadline
            item = watcher.next(wake - current)
            if isinstance(item, str):
                return item
            if item is None:
                if plan.bookmarks and time.monotonic() >= next_bookmark:
                    rv = store.bookmark_rv(watcher)
                    if rv is not None:
                        bookmark(rv)
                    next_bookmark = bookmark_due_after(time.monotonic())
                continue
            if initial_left > 0:
                initial_left -= 1
            event = classify(plan, item)
            if event is not None:
                write(_event(event[0], registry.out(rt, version, event[1]), sort_keys))
    except OSError:
        return "client"
    finally:
        store.unwatch(watcher)
