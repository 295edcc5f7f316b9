"""The hub for the replicator's unit tests: `controller.kube.fake.FakeKube` (it is also its own
"client": `kube=lambda c: c`) with shortcuts for the hub copy, and a client source that counts
reloads."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from controller.kube.api import ADDON, ErrorKind
from controller.kube.fake import FakeKube, Op

NAMESPACE = "cluster1"
NAME = "observability-addon"

# An HTTP status for each kind of failure (0: no answer at all).
_STATUS = {
    ErrorKind.CONFLICT: 409,
    ErrorKind.NOT_FOUND: 404,
    ErrorKind.UNAUTHORIZED: 401,
    ErrorKind.FORBIDDEN: 403,
    ErrorKind.THROTTLED: 429,
    ErrorKind.UNAVAILABLE: 503,
    ErrorKind.SERVER: 500,
    ErrorKind.INVALID: 422,
    ErrorKind.NETWORK: 0,
}


@dataclass
class FakeHub(FakeKube):
    """The hub's API server in memory; the addon CR's copy is `cluster1/observability-addon`."""

    def add(
        self,
        status: Mapping[str, Any] | None = None,
        *,
        namespace: str = NAMESPACE,
        name: str = NAME,
    ) -> None:
        self.put(
            ADDON,
            {
                "apiVersion": ADDON.api_version,
                "kind": ADDON.kind,
                "metadata": {"name": name, "namespace": namespace},
                **({"status": copy.deepcopy(dict(status))} if status is not None else {}),
            },
        )

    def tamper(self, status: Mapping[str, Any]) -> None:
        """Someone else writes the hub copy."""
        self.edit(ADDON, NAMESPACE, NAME, lambda obj: obj.update(status=copy.deepcopy(status)))

    def fail(
        self, op: Op, kind: ErrorKind, *, times: int = 1, retry_after: float | None = None
    ) -> None:
        self.fail_next(op, _STATUS[kind], times=times, retry_after=retry_after)

    def status(self) -> dict[str, Any] | None:
        obj = self.stored(ADDON, NAMESPACE, NAME)
        return copy.deepcopy(obj.get("status")) if obj else None

    @property
    def created(self) -> list[tuple[str, str]]:
        return [(NAMESPACE, call.name) for call in self.ops("create")]


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
