"""One process, assembled (controller-runtime's Manager is the model): `addon-status run` and
`addon-status hub` both are a `Process` with parts added to it.

A process serves its metrics and its probes on ports of their own, starts its parts in the
order they were added (and stops them in reverse), campaigns for a Lease when it elects a
leader (or leads from start to stop when it does not), and tells its parts when it starts and
stops leading. It owns the one signal/stop loop (`serve_until_signalled`).

Every thread of a process belongs to one of its parts (or to the process itself: its servers,
leader election, the calls' deadlines), each started through `controller.kube.runnable`, and
`/healthz` covers all of them: a part that says what is wrong with it (`Supervised`) fails its
check, naming the thread and the cause, while one of its threads is dead or one of its loops
has been inside one sync for longer than `STUCK_CALLS` request timeouts (every call is bounded
by one; no sync makes nearly that many). Each new cause is logged once.

Leadership is one state, the process's `Role` (`controller.ops.role`): leader election sets its
verdict, and every writer asks it `may_write()` right before it writes. On stop, a leader steps
down first (its parts finish what they hold: the spoke drains its worker and hands its last
status to the hub), then releases the Lease so that another replica takes over at once, then
the parts stop, the servers last.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Generic, Protocol, Self, TypeVar

from prometheus_client import CollectorRegistry, Gauge

from controller.flags.options import OptionsError, ProcessOptions
from controller.kube.api import Kube
from controller.kube.connection import Connection
from controller.kube.deadlines import alarm_problem
from controller.kube.rest import RestKube
from controller.kube.runnable import Supervised
from controller.ops.clocks import LeaseClock, SystemClock
from controller.ops.leader import LeaderElector, LeaderMetrics
from controller.ops.logs import configure_logging
from controller.ops.metrics import MetricsServer, WatchMetrics, WorkQueueMetrics
from controller.ops.probes import Check, ProbeServer
from controller.ops.role import Role
from controller.terminal import escaped
from statemachines.errors import AddonStatusError

__all__ = [
    "STUCK_CALLS",
    "Part",
    "Process",
    "lease_seam",
    "replica_identity",
    "run_process",
    "serve_until_signalled",
]

log = logging.getLogger(__name__)

OptionsT = TypeVar("OptionsT", bound=ProcessOptions)
STUCK_CALLS = 30  # request timeouts one sync may last before liveness calls it stuck


class Part(Protocol):
    """Something a process runs: a thread (a worker, a watch), a server."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


@dataclass(frozen=True, slots=True)
class _Added:
    name: str
    part: Part


def replica_identity(environ: Mapping[str, str] = os.environ) -> str:
    """The Lease holder's name: the pod's (from the downward API), else the host's with a
    random suffix, so two processes on one machine never share it."""
    return environ.get("POD_NAME") or f"{socket.gethostname()}_{secrets.token_hex(4)}"


def lease_seam(api: Connection, options: ProcessOptions) -> RestKube:
    """The seam the Lease is renewed through: each call bounded by half the renew deadline, so
    that one stuck call never outlasts the leadership it is meant to keep."""
    return RestKube(api, request_timeout=options.renew_deadline.total_seconds() / 2)


class Process(Generic[OptionsT]):
    """One process of `options`; see the module docstring. `serve=False` runs no metrics or
    probe server (a hub side inside the demo). `lease_kube` is where the Lease lives
    (required with `--leader-elect`), `lease_namespace` its namespace unless the options say.
    """

    def __init__(
        self,
        options: OptionsT,
        *,
        lease_kube: Kube | None = None,
        lease_namespace: str = "default",
        registry: CollectorRegistry | None = None,
        identity: str | None = None,
        io_clock: LeaseClock | None = None,
        serve: bool = True,
    ) -> None:
        self.options = options
        self.registry = registry or CollectorRegistry()
        self.watch_metrics = WatchMetrics(self.registry)
        self.queue_metrics = WorkQueueMetrics(self.registry)
        self.liveness: dict[str, Check] = {}
        self.readiness: dict[str, Check] = {}
        self.stuck_after = STUCK_CALLS * options.request_timeout
        self.elector: LeaderElector | None = None
        self.identity = identity or replica_identity()  # the Lease holder, the Events' instance
        self.role = Role()
        if options.leader_elect:
            if lease_kube is None:
                raise ValueError("leader election needs the Kube the Lease lives in")
            self.role = Role(elected=False, lease_held=self._lease_held)
            renew = options.renew_deadline.total_seconds()
            self.elector = LeaderElector(
                lease_kube,
                namespace=options.lease_namespace or lease_namespace,
                name=options.lease_name,
                identity=self.identity,
                lease_duration=options.lease_duration.total_seconds(),
                renew_deadline=renew,
                retry_period=options.retry_period.total_seconds(),
                clock=io_clock or SystemClock(),
                on_started_leading=lambda: self._lead(True),
                on_stopped_leading=lambda: self._lead(False),
                metrics=LeaderMetrics(self.registry),
                notes=self._lease_notes,
            )
            self.supervise("leader-election", self.elector.problems)
        Gauge(
            "addon_status_leader",
            "1 while this replica leads (writes and, on a spoke, accepts reports)",
            registry=self.registry,
        ).set_function(lambda: 1 if self.role.may_write() else 0)
        Gauge(
            "addon_status_ready",
            "1 while every readiness check passes (what /readyz answers), 0 otherwise",
            registry=self.registry,
        ).set_function(lambda: 1 if self._ready() else 0)
        self.metrics_server: MetricsServer | None = None
        self.probes: ProbeServer | None = None
        self._serve = serve
        if serve:
            self.supervise("metrics", lambda stuck: _served(self.metrics_server, stuck))
            self.supervise("probes", lambda stuck: _served(self.probes, stuck))
        self.supervise("deadlines", lambda stuck: [p] if (p := alarm_problem()) else [])
        self._parts: list[_Added] = []
        self._running: list[_Added] = []
        self._on_leading: list[Callable[[], None]] = []
        self._on_stepping_down: list[Callable[[], None]] = []
        self._lock = threading.Lock()  # leading and stepping down, from the election's thread
        self._leading_now = False  # the hooks last heard "leading"
        self.stopping = False  # stop() has begun: a step-down now is the last one
        self.releasing = True  # False: stop as a crash would, the Lease left to expire
        self._closing: list[Callable[[], None]] = []
        self._notes: list[Callable[[], Mapping[str, str]]] = []

    # --- assembling -------------------------------------------------------------------------

    def add(
        self, name: str, part: Part, *, alive: Check | None = None, ready: Check | None = None
    ) -> None:
        """Run `part` (started in the order added); `ready` joins /readyz, and /healthz checks
        the part's own problems when it is `Supervised` (and `alive` when given)."""
        self._parts.append(_Added(name, part))
        if isinstance(part, Supervised):
            self.supervise(name, part.problems, alive=alive)
        elif alive is not None:
            self.liveness[name] = alive
        if ready is not None:
            self.readiness[name] = ready

    def supervise(
        self, name: str, problems: Callable[[float], list[str]], *, alive: Check | None = None
    ) -> None:
        """`name` joins /healthz: it fails, saying why, while `problems(stuck_after)` finds
        any (or `alive` fails); each new cause is logged once."""
        told = [""]  # the cause last logged

        def check() -> bool | str:
            found = problems(self.stuck_after)
            if alive is not None and alive() is not True:
                found.append(f"{name} is not alive")
            cause, last = "; ".join(found), told[0]
            told[0] = cause
            if cause and cause != last:
                log.error("liveness fails", extra={"part": name, "cause": cause})
            return cause or True

        self.liveness[name] = check

    def _ready(self) -> bool:
        try:
            return all(check() for check in self.readiness.values())
        except Exception:  # a check that breaks is a check that fails, as /readyz says
            return False

    def on_leading(self, hook: Callable[[], None]) -> None:
        """`hook()` runs each time this replica starts leading (on the election's thread)."""
        self._on_leading.append(hook)

    def on_stepping_down(self, hook: Callable[[], None]) -> None:
        """`hook()` runs each time it stops leading, and once more on stop if it leads."""
        self._on_stepping_down.append(hook)

    def note_on_lease(self, notes: Callable[[], Mapping[str, str]]) -> None:
        """The leader keeps `notes()` as annotations on its Lease at each renewal: what an
        admin's `check hub` reads of a replica it cannot reach."""
        self._notes.append(notes)

    def _lease_notes(self) -> dict[str, str]:
        return {k: v for notes in self._notes for k, v in notes().items()}

    def close_with(self, close: Callable[[], None]) -> None:
        """`close()` runs once the process has stopped (or failed to start or be assembled):
        what the assembly opened for itself, such as its clients."""
        self._closing.append(close)

    # --- running ----------------------------------------------------------------------------

    def start(self) -> None:
        """Servers, then every part in order, then the election; on failure, stop what was
        started and raise."""
        self.stopping, self.releasing = False, True
        try:
            if self._serve:
                self._start_servers()
            for added in self._parts:
                added.part.start()
                self._running.append(added)
            if self.elector is not None:
                self.elector.start()
            else:
                self._lead(True)
        except BaseException:
            self.stop()
            raise
        log.info(
            "started",
            extra={
                "parts": [a.name for a in self._parts],
                "metricsPort": self.metrics_server.port if self.metrics_server else None,
                "probePort": self.probes.port if self.probes else None,
            },
        )

    def stop(self, *, release: bool = True) -> None:
        """Step down, release the Lease (unless `release=False`: a crash, as the other replica
        sees it), then stop the parts in reverse and the servers. Idempotent."""
        self.stopping, self.releasing = True, release
        if self.elector is not None:
            timeout = 2 * self.options.request_timeout + 15.0
            if not self.elector.stop(release=release, timeout=timeout):
                log.error("leader election did not stop in time")
        else:
            self._lead(False)
        while self._running:
            added = self._running.pop()
            try:
                added.part.stop()
            except Exception:
                log.exception("stopping %s failed", added.name)
        for server in (self.probes, self.metrics_server):
            if server is not None:
                server.stop()
        self.probes = self.metrics_server = None
        self.close()

    def close(self) -> None:
        """Close what `close_with` was given, newest first, each once."""
        while self._closing:
            close = self._closing.pop()
            try:
                close()
            except Exception:
                log.exception("closing failed")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def leading(self) -> bool:
        return self.role.may_write()

    def url(self, server: MetricsServer | ProbeServer | None) -> str:
        """Where `server` (this process's metrics or probes) answers, from this machine."""
        assert server is not None, "start() first, with serve=True"
        address = self.options.metrics_address
        if server is self.probes:
            address = self.options.probe_address
        return address.url(server.port)

    # --- inside ------------------------------------------------------------------------------

    def _start_servers(self) -> None:
        metrics, probes = self.options.metrics_address, self.options.probe_address
        self.metrics_server = MetricsServer(self.registry, host=metrics.host, port=metrics.port)
        self.metrics_server.start()
        self.probes = ProbeServer(
            host=probes.host, port=probes.port, liveness=self.liveness, readiness=self.readiness
        )
        self.probes.start()

    def _lead(self, leader: bool) -> None:
        with self._lock:
            if leader == self._leading_now:
                return
            self._leading_now = leader
            # A lost Lease stops the writes before anything else; a single replica that stops
            # still writes what its parts hold while they finish (the hooks), then no more.
            settle_first = not leader and self.elector is None
            if not settle_first:
                self.role.elect(leader)
            for hook in self._on_leading if leader else self._on_stepping_down:
                try:
                    hook()
                except Exception:
                    log.exception("a %s hook failed", "leading" if leader else "step-down")
            if settle_first:
                self.role.elect(False)

    def _lease_held(self) -> bool:
        return self.elector is not None and self.elector.is_leader


def _served(server: MetricsServer | ProbeServer | None, stuck_after: float) -> list[str]:
    return [] if server is None else server.problems(stuck_after)


class _Running(Protocol):
    def stop(self) -> None: ...


def run_process(
    command: str,
    options_type: type[OptionsT],
    args: argparse.Namespace,
    start: Callable[[OptionsT], _Running],
) -> int:
    """`addon-status <command>`: its options from `args` and `ADDON_STATUS_*` (2 and one line
    when they do not fit), JSON logs at their level, then `start(options)` served until a
    signal."""
    try:
        options = options_type.from_args(args, os.environ)
    except OptionsError as error:
        print(f"addon-status {command}: {error}", file=sys.stderr)
        return 2
    configure_logging(options.log_level)
    return serve_until_signalled(command, lambda: start(options))


def serve_until_signalled(command: str, start: Callable[[], _Running]) -> int:
    """Run what `start()` starts until SIGTERM or SIGINT: 0 then, 1 when it cannot start
    (the reason on stderr, one line). The handlers are installed before anything starts, so a
    SIGTERM during the start stops it cleanly instead of killing it."""
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal received; stopping", extra={"signal": signal.Signals(signum).name})
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            running = start()
        except (AddonStatusError, OSError) as error:
            print(f"addon-status {command}: cannot start: {escaped(error)}", file=sys.stderr)
            return 1
        try:
            stopping.wait()  # no polling: the handler sets it
        finally:
            running.stop()
        log.info("addon-status %s stopped", command)
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
