"""An in-memory API server behind the `Kube` seam, for the shell's unit tests: `MemoryKube`
(`controller.kube.memory`, kube-apiserver's rules the controller relies on) and what a test
does to it. Integration tests use kubesim and the real client instead; this fake is for tests
that drive one part alone, fast and without threads of its own.

Tests inject failures per operation (`fail_next`), run code inside an operation before its
checks (`before`: a racing writer), slow every call down (`delay`) or hold them (`gate`), write
as another writer would (`put`, `edit`, `delete`, `others_write`), forget the watch history
(`compact`), cut the watches (`disconnect`), and read what happened (`calls`, `written`).
"""

from __future__ import annotations

import builtins
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.kube.api import ApiResource, WatchEvent, error_for, json_copy
from controller.kube.memory import Call, MemoryKube, Op, merge_patched

__all__ = ["Call", "FakeKube", "merge_patched"]


@dataclass
class FakeKube(MemoryKube):
    """`MemoryKube` with the controls a test needs (see the module docstring)."""

    def fail_next(
        self,
        op: Op,
        error: Exception | int,
        *,
        times: int = 1,
        retry_after: float | None = None,
        resource: ApiResource | None = None,
    ) -> None:
        """The next `times` calls of `op` (on `resource` only, if given) raise `error` (an
        HTTP status: its error of the tree, 0 meaning no answer)."""
        if isinstance(error, int):
            status = error or None
            error = error_for(f"injected {error}", status=status, retry_after=retry_after)
        with self._changed:
            if resource is None:
                self.faults.setdefault(op, []).extend([error] * times)
            else:
                self._resource_faults.setdefault((op, resource), []).extend([error] * times)

    def serve(self, resource: ApiResource) -> None:
        """Serve another kind from now on (a CRD installed)."""
        with self._changed:
            self._served[(resource.api_version, resource.kind)] = resource

    def put(self, resource: ApiResource, obj: Mapping[str, Any]) -> dict[str, Any]:
        """Store `obj` as given (status included): an object someone else created."""
        meta = obj["metadata"]
        key = (resource, str(meta.get("namespace") or ""), str(meta["name"]))
        with self._changed:
            stored = json_copy(dict(obj))
            stored["metadata"].setdefault("generation", 1)
            self._objects[key] = stored
            return self._bump(key, "ADDED")

    def edit(
        self,
        resource: ApiResource,
        namespace: str,
        name: str,
        mutate: Callable[[dict[str, Any]], object],
    ) -> dict[str, Any]:
        """Another writer changes the object in place, without a precondition; the generation
        moves when the spec did."""
        key = (resource, namespace, name)
        with self._changed:
            obj = self._stored(key)
            spec = json_copy(obj.get("spec"))
            mutate(obj)
            if obj.get("spec") != spec:
                obj["metadata"]["generation"] = int(obj["metadata"].get("generation") or 1) + 1
            return self._bump(key, "MODIFIED")

    def delete(self, resource: ApiResource, namespace: str, name: str) -> None:
        key = (resource, namespace, name)
        with self._changed:
            gone = self._objects.pop(key)
            self._version += 1
            gone["metadata"]["resourceVersion"] = str(self._version)
            self._history.append((self._version, key, WatchEvent("DELETED", json_copy(gone))))
            self._changed.notify_all()

    def stored(self, resource: ApiResource, namespace: str, name: str) -> dict[str, Any] | None:
        with self._changed:
            obj = self._objects.get((resource, namespace, name))
            return json_copy(obj) if obj is not None else None

    def others_write(self, count: int) -> None:
        """Other objects change: the server's resourceVersion moves past every object's own."""
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

    @property
    def open_watches(self) -> int:
        with self._changed:
            return sum(1 for s in self._streams if not s.closed)

    @property
    def lock(self) -> threading.Condition:
        """Held, no call and no change can happen (for changes that must be seen together)."""
        return self._changed

    def ops(self, op: Op) -> builtins.list[Call]:
        with self._changed:
            return [c for c in self.calls if c.op == op]

    # ---- inside -------------------------------------------------------------------------------
