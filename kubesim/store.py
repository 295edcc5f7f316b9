"""The server's etcd: every object of every resource under one lock, one global revision that
becomes each write's resourceVersion, a bounded history of changes (what watches replay and
what an Exact list reconstructs from), and the open watches fed from it.

Stored objects are never mutated: a write replaces the dict, so a history entry or a reader
can hold on to one without copying.
"""

from __future__ import annotations

import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["Change", "ChangeType", "CompactedError", "ObjectKey", "ResourceId", "Store", "Watcher"]

ResourceId = tuple[str, str]  # (group, plural)
ObjectKey = tuple[str, str]  # (namespace, name)
ChangeType = Literal["ADDED", "MODIFIED", "DELETED"]
Obj = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Change:
    rv: int
    type: ChangeType
    resource: ResourceId
    key: ObjectKey
    object: Obj  # the new state; for DELETED the last state, carrying the deletion's revision
    previous: Obj | None


class CompactedError(Exception):
    """The history no longer reaches back to the requested revision."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"too old resource version: {requested} ({compacted})")
        self.requested = requested
        self.compacted = compacted


def _with_rv(obj: Obj, rv: int) -> Obj:
    out = dict(obj)
    out["metadata"] = {**obj.get("metadata", {}), "resourceVersion": str(rv)}
    return out


class Watcher:
    """One open watch: the changes of one resource, in revision order, until it ends."""

    def __init__(self, resource: ResourceId, backlog: list[Change]) -> None:
        self.resource = resource
        self._ready = threading.Condition()
        self._queue: deque[Change] = deque(backlog)
        self._end: str | None = None

    def push(self, change: Change) -> None:
        with self._ready:
            self._queue.append(change)
            self._ready.notify()

    def end(self, how: str) -> None:
        """`stopped` (the server stops: end the stream cleanly) or `dropped` (cut it)."""
        with self._ready:
            if self._end is None:
                self._end = how
            self._ready.notify()

    def pending(self) -> bool:
        return self.queued() > 0

    def queued(self) -> int:
        with self._ready:
            return len(self._queue)

    def next(self, timeout: float) -> Change | str | None:
        """The next change, the reason the watch ended, or None when `timeout` passed."""
        with self._ready:
            if not self._queue and self._end is None:
                self._ready.wait(max(timeout, 0.0))
            if self._end is not None:
                return self._end
            return self._queue.popleft() if self._queue else None


class Store:
    def __init__(self, history: int) -> None:
        self.lock = threading.RLock()
        self._progress = threading.Condition(self.lock)
        self._rv = 0
        self._objects: dict[ResourceId, dict[ObjectKey, Obj]] = {}
        self._history: deque[Change] = deque()
        self._history_limit = max(history, 0)
        self._compacted = 0
        self._watchers: set[Watcher] = set()
        # The last list read at a revision, in key order: the pages of one paginated list are
        # served from it, as kube-apiserver's watch cache serves them, not rebuilt per page.
        self._snapshot: tuple[ResourceId, int, list[ObjectKey], list[Obj]] | None = None

    @property
    def resource_version(self) -> int:
        with self.lock:
            return self._rv

    def get(self, resource: ResourceId, key: ObjectKey) -> Obj | None:
        with self.lock:
            return self._objects.get(resource, {}).get(key)

    def items(self, resource: ResourceId, namespace: str | None = None) -> list[Obj]:
        with self.lock:
            objects = self._objects.get(resource, {})
            return [
                objects[key] for key in sorted(objects) if namespace is None or key[0] == namespace
            ]

    def items_at(self, resource: ResourceId, rv: int, namespace: str | None = None) -> list[Obj]:
        """The objects as they were at revision `rv`, undoing the history after it."""
        keys, objects = self.sorted_at(resource, rv)
        if namespace is None:
            return list(objects)
        return [o for k, o in zip(keys, objects, strict=True) if k[0] == namespace]

    def sorted_at(self, resource: ResourceId, rv: int) -> tuple[list[ObjectKey], list[Obj]]:
        """The keys and objects at revision `rv`, in key order (shared: do not change them)."""
        with self.lock:
            if rv < self._compacted:
                raise CompactedError(rv, self._compacted)
            snapshot = self._snapshot
            if snapshot is not None and snapshot[:2] == (resource, rv):
                return snapshot[2], snapshot[3]
            found = self._undone(resource, rv)
            keys = sorted(found)
            self._snapshot = (resource, rv, keys, [found[k] for k in keys])
            return self._snapshot[2], self._snapshot[3]

    def _undone(self, resource: ResourceId, rv: int) -> dict[ObjectKey, Obj]:
        with self.lock:
            if rv < self._compacted:
                raise CompactedError(rv, self._compacted)
            objects = dict(self._objects.get(resource, {}))
            for change in reversed(self._history):
                if change.rv <= rv:
                    break
                if change.resource != resource:
                    continue
                if change.previous is None:
                    objects.pop(change.key, None)
                else:
                    objects[change.key] = change.previous
            return objects

    def commit(self, resource: ResourceId, key: ObjectKey, obj: Obj | None) -> Obj:
        """Write (or, with None, delete) one object at the next revision; returns what is
        stored (for a delete: the last state at the deletion's revision)."""
        with self.lock:
            objects = self._objects.setdefault(resource, {})
            previous = objects.get(key)
            if obj is None and previous is None:
                raise KeyError(key)
            self._rv += 1
            if obj is None:
                assert previous is not None
                stored = _with_rv(previous, self._rv)
                del objects[key]
                kind: ChangeType = "DELETED"
            else:
                stored = _with_rv(obj, self._rv)
                objects[key] = stored
                kind = "ADDED" if previous is None else "MODIFIED"
            change = Change(self._rv, kind, resource, key, stored, previous)
            self._history.append(change)
            while len(self._history) > self._history_limit:
                self._compacted = self._history.popleft().rv
            for watcher in self._watchers:
                if watcher.resource == resource:
                    watcher.push(change)
            self._progress.notify_all()
            return stored

    def wait_for(self, rv: int, timeout: float) -> bool:
        with self._progress:
            return self._progress.wait_for(lambda: self._rv >= rv, timeout)

    def watch(self, resource: ResourceId, since: int | None) -> Watcher:
        """Open a watch: from `since` it replays the history after that revision, without it
        it starts with a synthetic ADDED for every current object, as kube-apiserver does."""
        with self.lock:
            if since is None:
                backlog = [
                    Change(
                        int(obj["metadata"]["resourceVersion"]), "ADDED", resource, key, obj, None
                    )
                    for key, obj in sorted(self._objects.get(resource, {}).items())
                ]
            else:
                if since < self._compacted:
                    raise CompactedError(since, self._compacted)
                backlog = [c for c in self._history if c.rv > since and c.resource == resource]
            watcher = Watcher(resource, backlog)
            self._watchers.add(watcher)
            return watcher

    def unwatch(self, watcher: Watcher) -> None:
        with self.lock:
            self._watchers.discard(watcher)

    @property
    def watch_count(self) -> int:
        with self.lock:
            return len(self._watchers)

    def end_watches(self, how: str) -> int:
        with self.lock:
            watchers = list(self._watchers)
            self._watchers.clear()
        for watcher in watchers:
            watcher.end(how)
        return len(watchers)

    def bookmark_rv(self, watcher: Watcher) -> int | None:
        """The revision a bookmark may promise: only when nothing is queued for the watcher,
        checked under the write lock so no change can slip in between."""
        with self.lock:
            return None if watcher.pending() else self._rv

    def compact(self) -> None:
        with self.lock:
            self._history.clear()
            self._compacted = self._rv
