"""An in-memory hub behind the `HubObjects` seam, for the replicator's unit tests: objects
with resourceVersions (a stale write gets a 409), scripted failures, an optional delay per call
and a gate that holds calls, and a record of every call and every status written."""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from controller.kube.hub_objects import ErrorKind, HubError

NAMESPACE = "cluster1"
NAME = "observability-addon"


def eventually(check: Callable[[], bool], *, timeout: float = 5.0, what: str = "") -> None:
    """Poll `check` until it holds; fail with `what` after `timeout` (never hang)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.005)


@dataclass
class Call:
    op: str
    at: float


@dataclass
class FakeHub:
    """Implements `HubObjects` (it is also its own "client": `objects=lambda c: c`)."""

    delay: float = 0.0
    prune: frozenset[str] = frozenset()
    objects: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    written: list[dict[str, Any]] = field(default_factory=list)
    created: list[tuple[str, str]] = field(default_factory=list)
    gate: threading.Event = field(default_factory=threading.Event)
    _faults: list[tuple[str, HubError]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _version: int = 0

    def __post_init__(self) -> None:
        self.gate.set()

    # --- test controls

    def add(self, status: Mapping[str, Any] | None = None, *, namespace: str = NAMESPACE,
            name: str = NAME) -> None:
        with self._lock:
            self._version += 1
            self.objects[(namespace, name)] = {
                "apiVersion": "observability.open-cluster-management.io/v1beta1",
                "kind": "ObservabilityAddon",
                "metadata": {"name": name, "namespace": namespace,
                             "resourceVersion": str(self._version)},
                **({"status": copy.deepcopy(dict(status))} if status is not None else {}),
            }

    def tamper(self, status: Mapping[str, Any]) -> None:
        """Someone else writes the hub copy."""
        with self._lock:
            self._version += 1
            obj = self.objects[(NAMESPACE, NAME)]
            obj["status"] = copy.deepcopy(dict(status))
            obj["metadata"]["resourceVersion"] = str(self._version)

    def fail_next(self, op: str, kind: ErrorKind, *, times: int = 1,
                  retry_after: float | None = None) -> None:
        with self._lock:
            for _ in range(times):
                self._faults.append((op, HubError(kind, f"injected {kind}",
                                                  retry_after=retry_after)))

    def status(self) -> dict[str, Any] | None:
        with self._lock:
            obj = self.objects.get((NAMESPACE, NAME))
            return copy.deepcopy(obj.get("status")) if obj else None

    def ops(self, op: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.op == op]

    # --- HubObjects

    def read(self, namespace: str, name: str) -> dict[str, Any]:
        self._enter("read")
        with self._lock:
            obj = self.objects.get((namespace, name))
            if obj is None:
                raise HubError(ErrorKind.NOT_FOUND, "404 not found", status=404)
            return copy.deepcopy(obj)

    def replace_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self._enter("write")
        meta = body["metadata"]
        with self._lock:
            obj = self.objects[(meta["namespace"], meta["name"])]
            if meta["resourceVersion"] != obj["metadata"]["resourceVersion"]:
                raise HubError(ErrorKind.CONFLICT, "409 modified", status=409)
            self._version += 1
            status = {k: v for k, v in body["status"].items() if k not in self.prune}
            obj["status"] = copy.deepcopy(status)
            obj["metadata"]["resourceVersion"] = str(self._version)
            self.written.append(copy.deepcopy(status))
            return copy.deepcopy(obj)

    def create(self, namespace: str, name: str) -> dict[str, Any]:
        self._enter("create")
        self.add(namespace=namespace, name=name)
        self.created.append((namespace, name))
        with self._lock:
            return copy.deepcopy(self.objects[(namespace, name)])

    def _enter(self, op: str) -> None:
        with self._lock:
            self.calls.append(Call(op, time.monotonic()))
        if not self.gate.wait(10):
            raise HubError(ErrorKind.NETWORK, "gate never opened")
        if self.delay:
            time.sleep(self.delay)
        with self._lock:
            for index, (fault_op, error) in enumerate(self._faults):
                if fault_op == op:
                    del self._faults[index]
                    raise error


@dataclass
class FakeSource:
    """A client source that hands out the fake hub and counts reloads."""

    hub: FakeHub
    reload_succeeds: bool = True
    reloads: int = 0

    def current(self) -> FakeHub:
        return self.hub

    def reload(self) -> bool:
        self.reloads += 1
        return self.reload_succeeds
