"""Leader election on a `coordination.k8s.io/v1` Lease, so that two replicas can run and only
one writes status, replicates to the hub and accepts reports.

The rules are client-go's: a candidate takes the Lease when it is absent, held by nobody,
held by itself, or expired (`renewTime + leaseDurationSeconds < now`); every write carries
the read `resourceVersion`, so of two candidates racing for one Lease exactly one wins. The
leader renews every `retry_period` and stops leading when it could not renew for
`renew_deadline`; because that deadline is shorter than the lease duration and is counted
from before the renewing read, a leader always stops before anyone else may take over. The
gap between the two durations is the margin for clock skew between replicas.

Unlike the Python client's `leaderelection`, a stopping leader first steps down (so the
controller drains its work) and then releases the Lease (holder empty, duration 1 s), so the
other replica takes over at once instead of after a full lease duration. A leader whose renew
deadline passes (the API server did not answer in time) steps down and says so once; the
seconds since the last successful renewal are a gauge, so an outage is visible before then.
The Lease is read and written through the `Kube` seam, as a plain dict.

As in client-go, a leader renews without reading: it keeps the Lease as its last write
returned it and replaces it from there. Only when that write fails (409: someone else wrote
since; or the server did not answer) does the round read the Lease and apply the rules above,
so an undisturbed leader makes one request per `retry_period`, not two.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from controller.kube.api import LEASE, ConflictError, Kube, KubeError, NotFoundError
from controller.kube.runnable import Runnable
from controller.ops.clocks import LeaseClock, SystemClock

__all__ = [
    "LeaderElector",
    "LeaseClock",
    "LeaseRecord",
    "SystemClock",
    "lease_expired",
    "lease_spec",
    "may_acquire",
    "micro_time",
    "next_record",
    "released_record",
]

log = logging.getLogger(__name__)


# --- pure decisions ------------------------------------------------------------------------


@dataclass(frozen=True)
class LeaseRecord:
    """The election fields of a Lease's spec, free of the client's model classes."""

    holder: str | None
    duration_seconds: int | None
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int = 0

    @classmethod
    def from_spec(cls, spec: Any) -> LeaseRecord:
        """From a Lease's `spec` (None or not a mapping: a Lease without spec)."""
        if not isinstance(spec, dict):
            return cls(None, None, None, None, 0)
        duration = spec.get("leaseDurationSeconds")
        return cls(
            holder=spec.get("holderIdentity") or None,
            duration_seconds=duration if isinstance(duration, int) else None,
            acquire_time=_parse_time(spec.get("acquireTime")),
            renew_time=_parse_time(spec.get("renewTime")),
            transitions=int(spec.get("leaseTransitions") or 0),
        )


def lease_expired(record: LeaseRecord, now: datetime) -> bool:
    """Free for the taking: nobody holds it, or its holder has not renewed in time. A record
    without a renew time or duration counts as renewed long ago, as in client-go."""
    if not record.holder:
        return True
    if record.renew_time is None or record.duration_seconds is None:
        return True
    return record.renew_time + timedelta(seconds=record.duration_seconds) < now


def may_acquire(record: LeaseRecord, identity: str, now: datetime) -> bool:
    return record.holder == identity or lease_expired(record, now)


def next_record(
    record: LeaseRecord | None, *, identity: str, now: datetime, duration_seconds: int
) -> LeaseRecord:
    """The record that acquires or renews: a renewal keeps the acquire time, a change of
    holder counts one transition (client-go counts a take-over of a released Lease too)."""
    if record is not None and record.holder == identity:
        return LeaseRecord(
            identity, duration_seconds, record.acquire_time or now, now, record.transitions
        )
    transitions = record.transitions + 1 if record is not None else 0
    return LeaseRecord(identity, duration_seconds, now, now, transitions)


def released_record(record: LeaseRecord, now: datetime) -> LeaseRecord:
    """Holder empty and a one-second duration: free at once for any candidate."""
    return LeaseRecord(None, 1, now, now, record.transitions)


def micro_time(moment: datetime) -> str:
    """A metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits, even on a whole
    second (`isoformat()` drops them then, and a real API server rejects the Lease)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def lease_spec(record: LeaseRecord) -> dict[str, Any]:
    """The Lease's spec for `record`; absent fields are left out, as the API server does."""
    spec: dict[str, Any] = {
        "holderIdentity": record.holder,
        "leaseDurationSeconds": record.duration_seconds,
        "acquireTime": micro_time(record.acquire_time) if record.acquire_time else None,
        "renewTime": micro_time(record.renew_time) if record.renew_time else None,
        "leaseTransitions": record.transitions,
    }
    return {key: value for key, value in spec.items() if value is not None}


# --- the election loop ----------------------------------------------------------------------


class LeaderElector:
    """Campaigns for the Lease `namespace/name` as `identity` until stopped.

    `on_started_leading` / `on_stopped_leading` run on the election thread and must return
    quickly (start or stop the leader's workers). `is_leader` is safe from any thread and
    turns False by itself once the renew deadline passes, even if the thread is stuck.
    """

    def __init__(
        self,
        kube: Kube,
        *,
        namespace: str,
        name: str,
        identity: str,
        lease_duration: float = 15.0,
        renew_deadline: float = 10.0,
        retry_period: float = 2.0,
        clock: LeaseClock,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        metrics: LeaderMetrics | None = None,
        notes: Callable[[], Mapping[str, str]] = dict,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        if not identity:
            raise ValueError("identity must not be empty")
        self._kube = kube
        self.namespace, self.name, self.identity = namespace, name, identity
        self._duration_seconds = math.ceil(lease_duration)
        self._renew_deadline, self._retry_period = renew_deadline, retry_period
        self._clock, self._metrics = clock, metrics
        self._on_started, self._on_stopped = on_started_leading, on_stopped_leading
        self._notes = notes  # annotations the holder keeps on the Lease (`check hub` reads them)
        self._stop = threading.Event()
        self._release_on_stop = True
        self._runner = Runnable("leader-election", self.run, self._stop.set)
        self._leading = False
        self._last_renew = -math.inf
        self._observed_holder: str | None = None
        self._written: dict[str, Any] | None = None  # the Lease as our last write returned it
        if metrics is not None:
            metrics.renew_age.set_function(self.seconds_since_renewal)

    @property
    def is_leader(self) -> bool:
        return self._leading and self._clock.monotonic() - self._last_renew < self._renew_deadline

    def seconds_since_renewal(self) -> float:
        """Since the last successful renewal began (+inf before the first one)."""
        return self._clock.monotonic() - self._last_renew

    def problems(self, stuck_after: float) -> list[str]:
        """Its thread died (a round's calls are bounded by the Lease's own deadlines)."""
        problem = self._runner.problem()
        return [] if problem is None else [problem]

    @property
    def holder(self) -> str | None:
        """The holder seen at the last read of the Lease (None: free or never read)."""
        return self._observed_holder

    # --- lifecycle

    def start(self) -> None:
        """Run the election on a thread of its own."""
        if self._runner.alive:
            raise RuntimeError("leader election is already running")
        self._stop.clear()
        self._runner.start()

    def stop(self, *, release: bool = True, timeout: float = 5.0) -> bool:
        """Stop campaigning: step down (callbacks first) and, with `release`, free the Lease.
        `release=False` is a crash as the other replica sees it. False if the thread is still
        running after `timeout`."""
        self._release_on_stop = release
        return self._runner.stop(timeout)

    def run(self) -> None:
        """The election loop; returns after `stop()`."""
        try:
            while not self._stop.is_set():
                self.run_round()
                self._stop.wait(self._retry_period)
        finally:
            self._set_leading(False)
            if self._release_on_stop:
                self.release()

    def release(self) -> bool:
        """Free the Lease if we hold it; call only when the loop is not running (`stop`
        does). False when the Lease was not ours or the call failed."""
        try:
            lease = self._read()
            record = LeaseRecord.from_spec(lease.get("spec")) if lease is not None else None
            if record is None or record.holder != self.identity:
                return False
            self._write(lease, released_record(record, self._clock.now()))
        except KubeError as error:
            log.warning("could not release the Lease %s/%s: %s", self.namespace, self.name, error)
            return False
        log.info("released the Lease %s/%s", self.namespace, self.name)
        return True

    # --- one round

    def run_round(self) -> None:
        """One round: acquire or renew, then lead or step down (the loop's body; tests call
        it with a clock they move)."""
        started = self._clock.monotonic()
        try:
            held = self._acquire_or_renew()
        except KubeError as error:
            log.debug("Lease %s/%s not renewed: %s", self.namespace, self.name, error)
            held = None
        except Exception:
            # A bug must not end the election thread: the replica would look alive and never
            # lead again. Counted as a failed renewal, so leadership still ends on time.
            log.exception("leader election round failed")
            held = None
        in_time = self._clock.monotonic() - started < self._renew_deadline
        if held and in_time:
            self._last_renew = started
            self._set_leading(True)
        elif held is False:
            self._set_leading(False)
        elif self._leading and self.seconds_since_renewal() >= self._renew_deadline:
            log.warning(
                "could not renew the Lease %s/%s for %.1fs (renew deadline %.1fs): stepping down",
                self.namespace,
                self.name,
                self.seconds_since_renewal(),
                self._renew_deadline,
            )
            self._set_leading(False)

    def _acquire_or_renew(self) -> bool:
        """True: the Lease is ours now; False: someone else holds it."""
        now = self._clock.now()
        if self._renewed_from_last_write(now):
            return True
        lease = self._read()
        record = LeaseRecord.from_spec(lease.get("spec")) if lease is not None else None
        self._observed_holder = record.holder if record is not None else None
        if record is not None and not may_acquire(record, self.identity, now):
            return False
        wanted = next_record(
            record, identity=self.identity, now=now, duration_seconds=self._duration_seconds
        )
        try:
            self._written = self._write(lease, wanted)
        except ConflictError:
            if lease is None:
                return False  # another candidate created it first
            raise
        self._observed_holder = self.identity
        return True

    def _renewed_from_last_write(self, now: datetime) -> bool:
        """client-go's fast path: a leader within its renew deadline replaces the Lease it last
        wrote, with that write's resourceVersion. False (read, then decide) when it does not
        lead, or the write failed: a 409 means another writer changed the Lease since."""
        if not self.is_leader or self._written is None:
            return False
        record = LeaseRecord.from_spec(self._written.get("spec"))
        if record.holder != self.identity:
            return False
        wanted = next_record(
            record, identity=self.identity, now=now, duration_seconds=self._duration_seconds
        )
        try:
            self._written = self._write(self._written, wanted)
        except KubeError as error:
            log.debug(
                "Lease %s/%s not renewed from the last write (%s): reading it",
                self.namespace,
                self.name,
                error,
            )
            self._written = None
            return False
        return True

    def _set_leading(self, leading: bool) -> None:
        if leading == self._leading:
            return
        self._leading = leading
        if self._metrics is not None:
            self._metrics.transitions.inc()
        log.info(
            "%s %s leading on Lease %s/%s",
            self.identity,
            "started" if leading else "stopped",
            self.namespace,
            self.name,
        )
        callback = self._on_started if leading else self._on_stopped
        try:
            callback()
        except Exception:
            log.exception("leader election callback failed")

    # --- Lease I/O

    def _read(self) -> dict[str, Any] | None:
        """The Lease, or None when it does not exist."""
        try:
            return self._kube.get(LEASE, self.namespace, self.name)
        except NotFoundError:
            return None

    def _write(self, lease: dict[str, Any] | None, record: LeaseRecord) -> dict[str, Any]:
        """Create (lease None) or replace with the read resourceVersion, keeping the Lease's
        labels and annotations, the holder's notes added; the Lease as the server stored it."""
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if lease is not None:
            read = lease.get("metadata") or {}
            metadata |= {
                k: read[k] for k in ("resourceVersion", "labels", "annotations") if read.get(k)
            }
        if record.holder == self.identity and (notes := self._notes()):
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **notes}
        body = {
            "apiVersion": LEASE.api_version,
            "kind": LEASE.kind,
            "metadata": metadata,
            "spec": lease_spec(record),
        }
        if lease is None:
            return self._kube.create(LEASE, self.namespace, body)
        return self._kube.replace(LEASE, self.namespace, self.name, body)


class LeaderMetrics:
    """How often this replica became or stopped being the leader, and how long ago it last
    renewed the Lease. Whether it leads now is the worker's `addon_status_leader`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.transitions = Counter(
            "addon_status_leader_transitions_total",
            "Times this replica became or stopped being the leader.",
            registry=registry,
        )
        self.renew_age = Gauge(
            "addon_status_lease_renew_age_seconds",
            "Seconds since this replica last renewed the leader Lease (+Inf before it first "
            "did); a leader steps down when it reaches the renew deadline.",
            registry=registry,
        )
