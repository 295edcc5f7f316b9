"""The hub's time, as its answers say it: every answer of kube-apiserver carries a `Date`
header. `fleet` measures ages on it rather than on this machine's clock, which may be skewed from
the hub's by minutes (a laptop, a VM resumed from sleep) — and which the demo's hub does not
follow: it runs on the story's clock."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from controller.kube.api import KubeError

if TYPE_CHECKING:
    from controller.kube.rest import RestKube

__all__ = ["HubClock"]


class HubClock:
    """`now()` on the hub's clock: asked (`GET /version` through the seam, bounded in time and
    size as every call) at most once every `every` seconds, run on with the local monotonic
    clock in between; the local clock when the hub cannot be asked or sends no `Date`."""

    def __init__(self, kube: RestKube, *, every: float = 1.0) -> None:
        self._kube = kube
        self._every = every
        self._asked: tuple[datetime, float] | None = None  # the hub's time, and when asked

    def __call__(self) -> datetime:
        local = time.monotonic()
        if self._asked is None or local - self._asked[1] >= self._every:
            told = self._ask()
            self._asked = (told, local) if told is not None else None
        if self._asked is None:
            return datetime.now(UTC)
        told, asked = self._asked
        return told + timedelta(seconds=local - asked)

    def _ask(self) -> datetime | None:
        try:
            return self._kube.server_date()
        except KubeError:
            return None  # a clock must not fail the view: the local one then
