"""Replication of the spoke's addon status to the addon CR's copy on the hub.

The spoke must never wait for the hub (docs/spec.md §7): `publish` only stores the newest
status and queues the hub copy's key on the work queue (`controller.kube.workqueue`) of one
replication thread, which always copies the newest status it finds (latest state wins, so a
burst becomes one write and an older status never lands over a newer one), writes only when the
hub copy differs, retries with full-jitter backoff (at least as long as a `Retry-After` asks;
a publish does not cut it short), reloads the hub credentials on 401/403, and re-reads the hub
copy `resync_interval` after its last sync to repair a copy someone else changed.

The decisions (what to copy, when the copy is current, how long to back off) are the pure
functions at the top; the hub is reached through the `Kube` seam (`controller.kube.api`), and a
sync is the one status-update loop, `controller.kube.update.update_status`.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final, Protocol

from controller.kube.api import (
    ADDON,
    ApiResource,
    ConflictError,
    ErrorKind,
    Kube,
    KubeError,
    NotFoundError,
    json_copy,
)
from controller.kube.backoff import RETRY_AFTER_CEILING, Backoff, backoff_delay
from controller.kube.controller import Controller, Result
from controller.kube.managers import other_status_writers
from controller.kube.ratelimit import ItemBackoff
from controller.kube.rest import RestKube
from controller.kube.update import update_status
from controller.kube.workqueue import QueueMetrics
from controller.ops.clocks import MonotonicClock
from controller.spoke.metrics import ReplicationMetrics
from statemachines.conditions import format_time
from statemachines.hub_copy import CopyMode, for_hub
from statemachines.object_names import ADDON_CR

__all__ = [
    "RETRY_AFTER_CEILING",
    "ClientSource",
    "CopyMode",
    "Echo",
    "HubReplicator",
    "Publication",
    "backoff_delay",
    "hub_status_for",
    "in_sync",
    "projection",
]

log = logging.getLogger(__name__)

ANOTHER_WRITER_HOLD: Final = timedelta(minutes=10)  # twice MCO's endpoint operator's requeue
_REAUTH_KINDS: Final = frozenset({ErrorKind.UNAUTHORIZED, ErrorKind.FORBIDDEN})


# --- pure decisions ------------------------------------------------------------------------


def projection(status: Mapping[str, Any], mode: CopyMode) -> dict[str, Any]:
    """The part of a status that replication owns: the conditions, or the status without the
    controller's bookkeeping (`statemachines.hub_copy`)."""
    return for_hub(status, mode)


def hub_status_for(
    spoke_status: Mapping[str, Any], hub_status: Mapping[str, Any], mode: CopyMode
) -> dict[str, Any]:
    """The hub status to write: in `conditions` mode the hub's other status fields are someone
    else's and are kept; in `status` mode the spoke status replaces the hub's."""
    if mode == "status":
        return projection(spoke_status, mode)
    return {**json_copy(dict(hub_status)), **projection(spoke_status, mode)}


@dataclass(frozen=True)
class Echo:
    """What we last sent and what the hub stored from it. A hub whose schema prunes or
    defaults fields never stores exactly what we send; a copy that still looks like the hub's
    echo of our last write is current, or every resync would write again."""

    sent: dict[str, Any]
    stored: dict[str, Any]


def in_sync(
    spoke_status: Mapping[str, Any],
    hub_status: Mapping[str, Any],
    mode: CopyMode,
    *,
    echo: Echo | None = None,
) -> bool:
    """True when the hub copy needs no write."""
    wanted, found = projection(spoke_status, mode), projection(hub_status, mode)
    if wanted == found:
        return True
    return echo is not None and echo.sent == wanted and echo.stored == found


# --- the replication thread -------------------------------------------------------------------


class ClientSource(Protocol):
    """Where the hub client comes from (`controller.kube.kubeconfig.KubeconfigSource`)."""

    def current(self) -> Any: ...

    def reload(self) -> bool: ...


@dataclass(frozen=True)
class Publication:
    """One spoke status handed to `publish`: numbered so that "newer" is never ambiguous."""

    sequence: int
    status: Mapping[str, Any]


class _Stopping(Exception):  # noqa: N818 - a signal, not an error
    """`stop()` came while a sync was between its read and its write."""


class HubReplicator:
    """Copies the newest published spoke status to the hub CR `namespace/name`.

    `publish` is safe from any thread and never waits on the hub. One thread (`start`/`stop`)
    does all hub I/O, so hub writes are strictly in publication order. The hub CR is never
    created unless `create_missing`: a missing copy usually means the hub has not registered
    the cluster yet, which is the hub's decision. `kube` makes the seam to the hub from the
    client source's current client (tests hand in a `FakeKube` as the client itself).
    """

    def __init__(
        self,
        client_source: ClientSource,
        *,
        namespace: str,
        name: str = ADDON_CR,
        copy: CopyMode = "conditions",
        clock: MonotonicClock,
        metrics: ReplicationMetrics,
        resync_interval: float = 300.0,
        backoff_base: float = 0.5,
        backoff_max: float = 60.0,
        kube: Callable[[Any], Kube] = lambda client: RestKube(client, request_timeout=(5.0, 15.0)),
        create_missing: bool = False,
        conflict_retries: int = 5,
        queue_metrics: QueueMetrics | None = None,
        resource: ApiResource = ADDON,
    ) -> None:
        if copy not in ("conditions", "status"):
            raise ValueError(f"copy must be 'conditions' or 'status', not {copy!r}")
        self.namespace, self.name, self.copy = namespace, name, copy
        self.resource = resource  # the copy's kind: the spoke CR's
        self._others: tuple[str, ...] = ()  # other writers of the copy's status, told
        self._source, self._clock, self._metrics = client_source, clock, metrics
        self._kube = kube
        self._resync = resync_interval
        self._create_missing, self._conflict_retries = create_missing, max(conflict_retries, 1)
        self._key = f"{namespace}/{name}"
        self.loop: Controller[str] = Controller(
            "hub-replicator", self._sync_key, clock=clock.monotonic, metrics=queue_metrics,
            rate_limiter=ItemBackoff(Backoff(initial=backoff_base, maximum=backoff_max)),
        )  # fmt: skip
        self._wake = threading.Condition()
        # Everything below is guarded by `_wake`.
        self._latest: Publication | None = None
        self._synced = 0
        self._first_unsynced_at: float | None = None
        self._taken: int | None = None
        self._successor_at: float | None = None
        self._backing_off = False  # a failed sync's retry waits: a publish does not cut it short
        self._next_resync = clock.monotonic() + resync_interval
        self._last_error: ErrorKind | None = None
        self._echo: Echo | None = None  # only the replication thread touches it

    # --- the spoke's side

    def publish(self, status: Mapping[str, Any]) -> None:
        """Hand over the newest spoke status; returns at once whatever the hub is doing."""
        snapshot = json_copy(dict(status))
        with self._wake:
            now = self._clock.monotonic()
            sequence = (self._latest.sequence if self._latest else 0) + 1
            self._latest = Publication(sequence, snapshot)
            if self._first_unsynced_at is None:
                self._first_unsynced_at = now
            if self._taken is not None and self._successor_at is None:
                self._successor_at = now
            backing_off = self._backing_off
        if not backing_off:
            self.loop.queue.add(self._key)

    @property
    def last_synced_sequence(self) -> int:
        """The newest publication known to be on the hub (0: none yet)."""
        with self._wake:
            return self._synced

    def wait_synced(self, timeout: float) -> bool:
        """Block until everything published before this call is on the hub (for tests and
        for a graceful hand-over); False on timeout."""
        with self._wake:
            target = self._latest.sequence if self._latest else 0
            return self._wake.wait_for(lambda: self._synced >= target, timeout)

    # --- lifecycle

    def start(self) -> None:
        if self.loop.alive:
            raise RuntimeError("hub replication is already running")
        with self._wake:
            self._backing_off = False  # a new term starts afresh
        self.loop.start()
        self.loop.queue.add(self._key)

    def stop(self, timeout: float = 5.0) -> bool:
        """Stop the thread; False if it is still inside a hub call after `timeout` (it exits
        when that call returns or times out: the client's request timeout bounds it)."""
        return self.loop.stop(timeout)

    def problems(self, stuck_after: float) -> list[str]:
        return self.loop.problems(stuck_after)

    # --- the replication thread

    def _sync_key(self, key: str) -> Result | None:
        """Copy the newest publication when one is due; else wait for the resync, counted from
        the last sync."""
        with self._wake:
            now, latest = self._clock.monotonic(), self._latest
            self._backing_off = False
            if latest is None:
                return None
            if latest.sequence <= self._synced and self._next_resync > now:
                return Result(requeue_after=self._next_resync - now)
            self._taken, self._successor_at = latest.sequence, None
            repair = latest.sequence <= self._synced  # a resync: nothing new to say
        try:
            wrote = self._sync(latest, repair=repair)
        except _Stopping:
            return None
        except KubeError as error:
            return self._failed(error)
        return self._succeeded(latest, wrote=wrote)

    def _sync(self, publication: Publication, *, repair: bool = False) -> bool:
        """Fresh read, compare, write with the read resourceVersion; a 409 means someone wrote
        in between, so read again (bounded) rather than back off. True when it wrote. A
        `repair` of a copy another field manager wrote lately is left (docs/spec.md §12.1):
        told once, not fought; the project's next verdict is written as ever."""
        kube = self._kube(self._source.current())
        status = publication.status
        read: dict[str, Any] = {}

        def hub_status(current: Mapping[str, Any]) -> dict[str, Any] | None:
            if in_sync(status, current, self.copy, echo=self._echo):
                self._metrics.found_unchanged()
                return None
            if repair and self._written_by_another(read):
                return None
            return hub_status_for(status, current, self.copy)

        def read_copy() -> dict[str, Any]:
            read.clear()
            read.update(self._read_or_create(kube))
            return read

        def write(body: dict[str, Any]) -> dict[str, Any]:
            if self.loop.queue.shutting_down:  # leadership lost meanwhile: the new leader writes
                raise _Stopping
            stored = kube.replace_status(self.resource, self.namespace, self.name, body)
            self._echo = Echo(
                sent=projection(body["status"], self.copy),
                stored=projection(stored.get("status") or {}, self.copy),
            )
            self._metrics.wrote()
            return stored

        def conflicted(attempt: int, error: ConflictError) -> None:
            self._metrics.failed(error.kind)
            log.debug("hub copy changed while writing, reading it again")

        updated = update_status(
            read_copy,
            hub_status,
            write,
            what=f"hub copy {self.namespace}/{self.name}",
            attempts=self._conflict_retries,
            on_conflict=conflicted,
        )
        return updated.written

    def _written_by_another(self, copy: Mapping[str, Any]) -> bool:
        """Whether another field manager wrote the copy's status within `ANOTHER_WRITER_HOLD`;
        told once per set of writers."""
        since = format_time(datetime.now(UTC) - ANOTHER_WRITER_HOLD)
        others = other_status_writers((copy.get("metadata") or {}).get("managedFields"),
                                      since=since)  # fmt: skip
        if others and others != self._others:
            log.warning(
                "hub copy %s/%s: its status is also written by %s (managedFields); not written "
                "back until the next status of this controller: switch that writer off "
                "(docs/spec.md §12.1)", self.namespace, self.name, ", ".join(others),
            )  # fmt: skip
        self._others = others
        return bool(others)

    def _read_or_create(self, kube: Kube) -> dict[str, Any]:
        try:
            return kube.get(self.resource, self.namespace, self.name)
        except NotFoundError:
            if not self._create_missing:
                raise
        log.info("creating the hub copy %s/%s", self.namespace, self.name)
        body = {
            "apiVersion": self.resource.api_version,
            "kind": self.resource.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
        }
        return kube.create(self.resource, self.namespace, body)

    def _succeeded(self, publication: Publication, *, wrote: bool) -> Result:
        with self._wake:
            now = self._clock.monotonic()
            lag: float | None = None
            if publication.sequence > self._synced:
                if self._first_unsynced_at is not None:
                    lag = now - self._first_unsynced_at
                self._synced = publication.sequence
                self._first_unsynced_at = self._successor_at
            recovered, self._last_error = self._last_error, None
            self._taken = None
            self._next_resync = now + self._resync
            self._wake.notify_all()
        self._metrics.synced(lag=lag)
        if recovered is not None:
            log.info("hub copy %s/%s in sync again", self.namespace, self.name)
        log.debug("hub sync of #%d: %s", publication.sequence, "written" if wrote else "equal")
        return Result(requeue_after=self._resync)

    def _failed(self, error: KubeError) -> Result:
        """Retried after the key's backoff (at least the server's `Retry-After`); the first
        failure of a kind is told, 401/403 reload the credentials."""
        with self._wake:
            self._backing_off = True
            self._taken = None
            repeated, self._last_error = self._last_error is error.kind, error.kind
        self._metrics.failed(error.kind)
        log.log(
            logging.DEBUG if repeated else logging.WARNING,
            "hub copy %s/%s not synced (%s: %s); retrying with backoff",
            self.namespace,
            self.name,
            error.kind,
            error.detail,
        )
        if error.kind is ErrorKind.NOT_FOUND:
            log.log(
                logging.DEBUG if repeated else logging.WARNING,
                "the hub has no addon CR %s/%s; it is not created (create_missing is off)",
                self.namespace,
                self.name,
            )
        if error.kind in _REAUTH_KINDS:
            reloaded = self._source.reload()
            log.info("hub credentials %s", "reloaded" if reloaded else "kept (reload failed)")
        return Result(retry=True, retry_after=error.retry_after)
