"""An in-memory addon CR behind the `AddonStore` seam, and a clock the test moves.

The fake keeps the Kubernetes rules the controller relies on: a resourceVersion that moves on
every write, a PUT on status that needs the read resourceVersion (409 otherwise) and touches only
the status, a generation that moves with the spec, a watch that replays history after a version
and answers 410 Gone once that history was compacted. Faults are injected per operation.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from controller.kube.addons import (
    AddonNotFoundError,
    AddonRef,
    ConflictError,
    EventRecord,
    GoneError,
    WatchEvent,
)

__all__ = ["NAME", "NAMESPACE", "T0", "FakeAddonStore", "FakeClock", "addon_object"]

NAMESPACE = "open-cluster-management-addon-observability"
NAME = "observability-addon"
T0 = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)


class FakeClock:
    """The worker's clock; thread-safe, moved only by the test."""

    def __init__(self, start: datetime = T0) -> None:
        self._now = start
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def move(self, **delta: float) -> datetime:
        with self._lock:
            self._now += timedelta(**delta)
            return self._now


def addon_object(*, status: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "observability.open-cluster-management.io/v1beta1",
        "kind": "ObservabilityAddon",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "uid": "uid-1",
            "generation": generation,
            "resourceVersion": "1",
        },
        "spec": {},
    }
    if status is not None:
        obj["status"] = status
    return obj


@dataclass
class _Stream:
    store: FakeAddonStore
    after: int
    deadline: float
    closed: bool = False

    def __iter__(self) -> Iterator[WatchEvent]:
        return self.store._events_after(self)

    def close(self) -> None:
        with self.store._changed:
            self.closed = True
            self.store._changed.notify_all()


@dataclass
class FakeAddonStore:
    """One CR in memory. `faults[op]` is a list of exceptions raised by the next calls of `op`
    (get, list, replace_status, watch, record_event, count_event); `before_replace` runs inside
    a status PUT before the resourceVersion check (a racing writer)."""

    obj: dict[str, Any] | None = field(default_factory=addon_object)
    ref: AddonRef = field(default_factory=lambda: AddonRef(NAMESPACE, NAME))
    faults: dict[str, list[Exception]] = field(default_factory=dict)
    before_replace: Callable[[FakeAddonStore], object] | None = None
    puts: list[dict[str, Any]] = field(default_factory=list)  # status PUTs that succeeded
    conflicts: int = 0
    events: list[EventRecord] = field(default_factory=list)  # Events created
    counted: list[EventRecord] = field(default_factory=list)  # repeats patched onto one
    gets: int = 0

    def __post_init__(self) -> None:
        self._changed = threading.Condition()
        self._version = int(self.obj["metadata"]["resourceVersion"]) if self.obj else 1
        self._history: list[tuple[int, WatchEvent]] = []
        self._horizon = 0  # versions at or below this one are compacted away
        self._streams: list[_Stream] = []

    # ---- the AddonStore protocol ------------------------------------------------------------

    def get(self) -> dict[str, Any]:
        self._fault("get")
        with self._changed:
            self.gets += 1
            if self.obj is None:
                raise AddonNotFoundError("not found", status=404)
            return copy.deepcopy(self.obj)

    def list(self) -> tuple[dict[str, Any] | None, str]:
        self._fault("list")
        with self._changed:
            return copy.deepcopy(self.obj), str(self._version)

    def replace_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        self._fault("replace_status")
        if self.before_replace is not None:
            self.before_replace(self)
        with self._changed:
            if self.obj is None:
                raise AddonNotFoundError("not found", status=404)
            if obj["metadata"].get("resourceVersion") != self.obj["metadata"]["resourceVersion"]:
                self.conflicts += 1
                raise ConflictError("the object has been modified", status=409)
            self.obj["status"] = copy.deepcopy(obj.get("status") or {})
            self.puts.append(copy.deepcopy(self.obj["status"]))
            return self._bump("MODIFIED")

    def watch(self, resource_version: str, *, timeout_seconds: int) -> _Stream:
        self._fault("watch")
        stream = _Stream(self, int(resource_version or 0), _monotonic() + timeout_seconds)
        with self._changed:
            self._streams.append(stream)
        return stream

    def record_event(self, record: EventRecord) -> str:
        self._fault("record_event")
        with self._changed:
            self.events.append(record)
            return record.name or f"{NAME}.{len(self.events):x}"

    def count_event(self, record: EventRecord) -> None:
        self._fault("count_event")
        with self._changed:
            self.counted.append(record)

    # ---- what other actors do to the CR ------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        with self._changed:
            assert self.obj is None
            self.obj = copy.deepcopy(obj)
            return self._bump("ADDED")

    def change_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Someone edits the spec: the generation moves."""
        with self._changed:
            assert self.obj is not None
            self.obj["spec"] = copy.deepcopy(spec)
            self.obj["metadata"]["generation"] += 1
            return self._bump("MODIFIED")

    def change_status(self, mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Another writer changes the status (no precondition)."""
        with self._changed:
            assert self.obj is not None
            status = self.obj.setdefault("status", {})
            mutate(status)
            return self._bump("MODIFIED")

    def delete(self) -> None:
        with self._changed:
            assert self.obj is not None
            gone = self.obj
            self.obj = None
            self._version += 1
            gone["metadata"]["resourceVersion"] = str(self._version)
            self._history.append((self._version, WatchEvent("DELETED", copy.deepcopy(gone))))
            self._changed.notify_all()

    def others_write(self, count: int) -> None:
        """Other objects on the server change: the server's resourceVersion moves past the
        CR's own."""
        with self._changed:
            self._version += count

    def compact(self) -> None:
        """Drop the watch history: a watch from an older version now gets 410 Gone."""
        with self._changed:
            self._horizon = self._version
            self._history.clear()

    def disconnect(self) -> None:
        """End every open watch, as a dropped connection does."""
        with self._changed:
            for stream in self._streams:
                stream.closed = True
            self._changed.notify_all()

    def while_disconnected(self, change: Callable[[], object], *, compact: bool) -> None:
        """Drop every watch, then `change` (and compact the history) before any watch can come
        back: the controller's next watch starts from a version older than the change."""
        with self._changed:
            self.disconnect()
            change()
            if compact:
                self.compact()

    @property
    def status(self) -> dict[str, Any]:
        with self._changed:
            assert self.obj is not None
            return copy.deepcopy(self.obj.get("status") or {})

    @property
    def open_watches(self) -> int:
        with self._changed:
            return sum(1 for s in self._streams if not s.closed)

    # ---- inside -------------------------------------------------------------------------------

    def _fault(self, op: str) -> None:
        pending = self.faults.get(op)
        if pending:
            raise pending.pop(0)

    def _bump(self, kind: Literal["ADDED", "MODIFIED"]) -> dict[str, Any]:
        assert self.obj is not None
        self._version += 1
        self.obj["metadata"]["resourceVersion"] = str(self._version)
        snapshot = copy.deepcopy(self.obj)
        self._history.append((self._version, WatchEvent(kind, snapshot)))
        self._changed.notify_all()
        return copy.deepcopy(snapshot)

    def _events_after(self, stream: _Stream) -> Iterator[WatchEvent]:
        if stream.after < self._horizon:
            raise GoneError("too old resource version", status=410)
        seen = stream.after
        while True:
            with self._changed:
                while not stream.closed and not self._newer(seen):
                    left = stream.deadline - _monotonic()
                    if left <= 0:
                        stream.closed = True
                        break
                    self._changed.wait(min(left, 0.5))
                if stream.closed:
                    return
                version, event = next((v, e) for v, e in self._history if v > seen)
            seen = version
            yield WatchEvent(event.type, copy.deepcopy(event.object))

    def _newer(self, seen: int) -> bool:
        return any(v > seen for v, _ in self._history)


def _monotonic() -> float:
    return time.monotonic()
