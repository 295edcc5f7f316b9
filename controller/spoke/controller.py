"""The spoke side put together: `SpokeController`.

It assembles the spoke's parts around one `AddonStore` — the reconcile worker, the watch, the
Event recorder, the metrics and probe servers, and (plugged in from outside) the report API and
the services that need the worker — starts them in dependency order and stops them in reverse.
`controller.app.Replica` builds the store from the options and plugs the report API, hub
replication and leader election into it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry

from controller.kube.addons import AddonStore
from controller.ops.backoff import Backoff
from controller.ops.metrics import ControllerMetrics, MetricsServer
from controller.ops.probes import ProbeServer
from controller.ops.role import Role
from controller.spoke.events import EventRecorder
from controller.spoke.watch import AddonWatch
from controller.spoke.worker import Clock, Worker, utc_now
from statemachines.config import Config

__all__ = [
    "Endpoint",
    "ReportServerFactory",
    "Service",
    "ServiceFactory",
    "SpokeController",
]

log = logging.getLogger(__name__)


class Endpoint(Protocol):
    """Where a server listens (port 0: any free port)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


class Service(Protocol):
    """Something with a background thread: the report API server, for one."""

    def start(self) -> None: ...

    def stop(self) -> None: ...


# Builds the report API in front of the worker (its `submit` is the report sink); the spoke side
# does not know the report API (`controller.app.Replica` passes a factory built from its flags).
ReportServerFactory = Callable[[Worker], Service]
# Anything else that runs beside the worker and needs it: leader election (its callbacks call
# `worker.set_leader`), hub replication (it subscribes to `worker.on_status_written`).
ServiceFactory = Callable[[Worker], Service]


class SpokeController:
    """The running controller of one addon CR. `start()` raises (and leaves nothing running)
    when the CR cannot be read; `stop()` is idempotent and joins every thread it started."""

    def __init__(
        self,
        store: AddonStore,
        config: Config,
        *,
        metrics_address: Endpoint,
        probe_address: Endpoint,
        clock: Clock = utc_now,
        registry: CollectorRegistry | None = None,
        report_server: ReportServerFactory | None = None,
        services: Sequence[ServiceFactory] = (),
        role: Role | None = None,
        watch_seconds: int = 300,
        watch_backoff: Backoff | None = None,
        max_wait: float = 30.0,
        unready_after: float = 30.0,
    ) -> None:
        """`role` says whether this replica may write (default: the only replica);
        `max_wait` is the longest the worker sleeps without looking at `clock` (short for a
        clock faster than real time); `watch_backoff` paces the watch's retries while the API
        server is away; `unready_after` is how long a status change may wait to be written
        before `/readyz` fails."""
        self.store = store
        self.registry = registry or CollectorRegistry()
        self.metrics = ControllerMetrics(self.registry, config)
        self.recorder = EventRecorder(
            self.store, on_result=lambda outcome: self.metrics.events.labels(outcome).inc()
        )
        self.worker = Worker(
            self.store,
            config,
            metrics=self.metrics,
            clock=clock,
            record_events=self.recorder.record,
            role=role,
            max_wait=max_wait,
            unready_after=unready_after,
        )
        self.watch = AddonWatch(
            self.store,
            self.worker.observe,
            watch_seconds=watch_seconds,
            backoff=watch_backoff,
            on_restart=lambda cause: self.metrics.watch_restarts.labels(cause).inc(),
            on_connected=lambda connected: self.metrics.watch_connected.set(int(connected)),
        )
        self.metrics_server = MetricsServer(
            self.registry, host=metrics_address.host, port=metrics_address.port
        )
        self.probes = ProbeServer(
            host=probe_address.host,
            port=probe_address.port,
            liveness={"worker": lambda: self.worker.alive, "watch": lambda: self.watch.alive},
            # A follower is ready too: it answers reports with 503 + Retry-After and closes the
            # connection, so the retry may reach the leader. Readiness tied to leadership would
            # block rolling updates and node drains (the follower could never become ready).
            readiness={
                "worker": lambda: self.worker.alive,
                "addon": lambda: self.worker.present,
                # A leader whose status writes keep failing cannot do its job: say so, so
                # that Kubernetes shows it (and stops sending it reports).
                "status-write": lambda: self.worker.writing,
            },
        )
        # --- the report API plugs in here (controller.reports.server.ReportServer) -------------
        self.report_server: Service | None = report_server(self.worker) if report_server else None
        self.services: list[Service] = [make(self.worker) for make in services]
        self._stops: list[Callable[[], None]] = []

    def start(self) -> None:
        """Read the CR and start everything; on failure, stop what was started and raise."""
        # Stopped in reverse: the worker stops before the recorder it hands Events to, and
        # the watch before the worker it feeds.
        steps: list[tuple[Callable[[], None], Callable[[], None]]] = [
            (self.recorder.start, self.recorder.stop),
            (self.worker.start, self.worker.stop),
            (self.watch.start, self.watch.stop),
            (self.metrics_server.start, self.metrics_server.stop),
            (self.probes.start, self.probes.stop),
        ]
        steps += [(service.start, service.stop) for service in self.services]
        if self.report_server is not None:
            steps.append((self.report_server.start, self.report_server.stop))
        try:
            for start, stop in steps:
                start()
                self._stops.append(stop)
        except BaseException:
            self.stop()
            raise
        log.info(
            "spoke controller started",
            extra={
                "addon": str(self.store.ref),
                "metricsPort": self.metrics_server.port,
                "probePort": self.probes.port,
            },
        )

    def stop(self) -> None:
        """Stop in reverse order of start: the report API first, the Event recorder last."""
        while self._stops:
            stop = self._stops.pop()
            try:
                stop()
            except Exception:
                log.exception("stopping a part of the controller failed")

    def __enter__(self) -> SpokeController:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
