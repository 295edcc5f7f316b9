"""`addon-status run`: one `Replica` of the spoke controller, a `controller.process.Process` with
the spoke's parts added to it — the Event recorder, the reconcile worker, the watch of the CR,
the health rules' evaluator and the watches of their objects, the report API in front of the
worker — and hub replication for each leadership term.

Who does what while leading. A leader judges reports, writes the spoke CR's status and copies it
to the hub; a follower keeps its watch and its probes and is ready, but answers reports with
503, `Retry-After` and a closed connection, so that the reporter's retry may be balanced to the
leader (a follower that is not ready would block rolling updates and drains). On becoming
leader, the worker rebuilds its machines from the CR, where the previous leader left them, and
hands the status it found to replication; on stepping down it stops judging and writing at once,
the answers still waiting for a write are told to go elsewhere, and replication stops. A replica
shutting down steps down, lets the worker drain, gives the hub a moment to receive the last
status, and only then releases the Lease, so that the other replica takes over at once.

Each leadership term replicates through a fresh `HubReplicator`: a new term starts from what
the CR says, never from a status an earlier term published (an older status must never land
on the hub over a newer one that another replica wrote meanwhile).

Tests and the demo build a `Replica` in process with an injected clock, spoke client (or an
in-memory `Kube`) and hub client source, on port 0 everywhere.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable, Iterator
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path

from prometheus_client import CollectorRegistry

from controller.flags.options import Address, OptionsError
from controller.kube.api import Kube, NotFoundError
from controller.kube.backoff import Backoff
from controller.kube.connection import Connection
from controller.kube.kubeconfig import KubeconfigSource, client_for, client_for_url
from controller.kube.rest import RestKube
from controller.ops.clocks import LeaseClock, MachineClock, SystemClock, utc_now
from controller.process import Process, lease_seam, run_process
from controller.report_api.flags import build_report_server
from controller.report_api.server import ReportServer
from controller.spoke.addon import GROUP, PLURAL, AddonStore
from controller.spoke.errors import WorkerError
from controller.spoke.evaluation import Evaluations
from controller.spoke.events import EventRecorder
from controller.spoke.metrics import AddonConditions, ControllerMetrics, ReplicationMetrics
from controller.spoke.options import RunOptions
from controller.spoke.replication import ClientSource, HubReplicator
from controller.spoke.terms import Replication
from controller.spoke.watches import ADDON_WATCH, addon_watch, object_watches
from controller.spoke.worker import Worker
from controller.spoke.worker_sink import WorkerSink
from statemachines.config import Config
from statemachines.related import RelatedObject

__all__ = ["Replica", "demo_controller", "related_objects", "run_command"]

log = logging.getLogger(__name__)

_HANDOVER = 2.0  # seconds a stopping leader gives the hub to receive its last status


def related_objects(options: RunOptions) -> list[RelatedObject]:
    """What the shell adds to `status.relatedObjects` (docs/spec.md §9): the addon CR, and the Lease
    when electing. The health rules' objects and the configuration's come with the Config."""
    addon = options.ref
    found = [RelatedObject(GROUP, PLURAL, addon.name, addon.namespace)]
    if options.leader_elect:
        lease = options.lease_ref
        found.append(RelatedObject("coordination.k8s.io", "leases", lease.name, lease.namespace))
    return found


class Replica(Process[RunOptions]):
    """One replica of the spoke controller, from `RunOptions`; see the module docstring.

    `start()` raises (and leaves nothing running) when the CR cannot be read or a server
    cannot listen; `stop()` is idempotent and joins every thread it started.
    """

    def __init__(
        self,
        options: RunOptions,
        *,
        api_client: Connection | None = None,
        kube: Kube | None = None,
        hub_source: ClientSource | None = None,
        clock: MachineClock = utc_now,
        io_clock: LeaseClock | None = None,
        config: Config | None = None,
        registry: CollectorRegistry | None = None,
        identity: str | None = None,
        hub_backoff: tuple[float, float] = (0.5, 60.0),
        watch_seconds: int = 300,
        watch_backoff: Backoff | None = None,
        unready_after: float = 30.0,
    ) -> None:
        """`kube` (an in-memory `Kube` in unit tests) or `api_client` (else the one of
        `--kubeconfig`) is the spoke. `clock` drives the state machines; `io_clock` the
        Lease and hub retries (real time unless a test moves it). `hub_source` replaces the
        `--hub-kubeconfig` file; `hub_backoff` is (first, longest) wait between failed hub
        calls; `unready_after` how long a change may wait to be written before /readyz fails."""
        self.config = (config or options.config()).with_related(*related_objects(options))
        own = api_client is None and kube is None
        if own:
            api_client = client_for(options.kubeconfig)
        if kube is None:
            assert api_client is not None
            kube = RestKube(api_client, request_timeout=options.request_timeout)
        self.api_client, self.kube = api_client, kube
        self._io_clock = io_clock or SystemClock()
        self._hub_source = hub_source
        self._hub_backoff = hub_backoff
        super().__init__(
            options,
            lease_kube=kube if api_client is None else lease_seam(api_client, options),
            lease_namespace=options.addon_namespace,
            registry=registry,
            identity=identity,
            io_clock=self._io_clock,
        )
        if own and api_client is not None:
            self.close_with(api_client.close)
        self.replication: Replication | None = None  # the hub copy, when there is a hub
        try:
            self._assemble(clock, watch_seconds, watch_backoff, unready_after)
        except BaseException:
            self.close()
            raise

    def _assemble(
        self,
        clock: MachineClock,
        watch_seconds: int,
        watch_backoff: Backoff | None,
        unready_after: float,
    ) -> None:
        options, config = self.options, self.config
        store = AddonStore(self.kube, options.ref, instance=self.identity)
        self.metrics = metrics = ControllerMetrics(self.registry, config)
        self.registry.register(AddonConditions(lambda: self.worker.state))
        recorder = EventRecorder(
            store,
            on_result=lambda outcome: metrics.events.labels(outcome).inc(),
            metrics=self.queue_metrics.queue("event-recorder"),
        )
        self.worker = worker = Worker(
            store,
            config,
            metrics=metrics,
            clock=clock,
            record_events=recorder.record,
            role=self.role,
            unready_after=unready_after,
            queue_metrics=self.queue_metrics.queue("reconcile-worker"),
        )
        self.watch = addon_watch(
            self.kube,
            options.ref,
            worker.observe,
            metrics=self.watch_metrics.watch(ADDON_WATCH),
            backoff=watch_backoff,
            watch_seconds=watch_seconds,
        )
        self.add("event-recorder", recorder)
        # A follower is ready too: it answers reports with 503 + Retry-After and closes the
        # connection, so the retry may reach the leader.
        self.add("worker", worker, ready=lambda: worker.alive)
        self.readiness["addon"] = lambda: worker.present
        # A leader whose status writes keep failing cannot do its job: say so.
        self.readiness["status-write"] = lambda: worker.writing
        self.add("watch", self.watch)
        self.evaluations = Evaluations(
            worker.observe_object, metrics=self.queue_metrics.queue("health-rules")
        )
        if config.resources:
            self.add("health-rules", self.evaluations)
        self.object_watches = object_watches(
            self.kube,
            config.resources,
            self.evaluations.offer,
            metrics=self.watch_metrics,
            backoff=watch_backoff,
            watch_seconds=watch_seconds,
        )
        for informer in self.object_watches:
            self.watch_metrics.watch(informer.name)
            self.add(informer.name, informer)
        self.sink = WorkerSink(worker)
        self.report_server: ReportServer = build_report_server(
            options,
            sink=self.sink,
            config=config,
            registry=self.registry,
            kube=lambda: self.kube,
        )
        # Ready only once it listens: the Service routes reports to a ready pod at once.
        self.add("report-api", self.report_server, ready=lambda: self.report_server.listening)
        make = self._replicator_maker()
        if make is not None:
            self.replication = Replication(make)
            worker.on_status_written.append(self.replication.publish)
            self.supervise("hub-replication", self.replication.problems)
        self.on_leading(self._begin_term)
        self.on_stepping_down(self._end_term)

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        try:
            super().start()
        except NotFoundError as error:
            raise OptionsError(
                f"the addon CR {self.options.ref} does not exist (kind ObservabilityAddon; "
                "set --addon-name / --addon-namespace)"
            ) from error

    # ---- what tests, the demo and the probes look at ---------------------------------------

    @property
    def leading(self) -> bool:
        return self.worker.leading

    @property
    def report_url(self) -> str:
        return self.report_server.url

    @property
    def metrics_url(self) -> str:
        return self.url(self.metrics_server)

    @property
    def probe_url(self) -> str:
        return self.url(self.probes)

    # ---- leadership --------------------------------------------------------------------------

    def _begin_term(self) -> None:
        if self.replication is not None:
            self.replication.begin_term()
        if self.elector is not None:
            self.worker.set_leader(True)

    def _end_term(self) -> None:
        if self.elector is not None:
            self.worker.set_leader(False)
        drain = self.options.request_timeout + 1.0
        try:
            self.worker.tick().result(timeout=drain)
        except (FutureTimeout, WorkerError) as error:
            log.warning("the worker did not drain before the step-down: %s", error or "timeout")
        if self.replication is not None:
            handing_over = self.stopping and self.releasing
            self.replication.end_term(hand_over=_HANDOVER if handing_over else None, drain=drain)

    def _replicator_maker(self) -> Callable[[], HubReplicator] | None:
        """Builds one term's replicator; None when there is no hub to replicate to."""
        source = self._hub_source
        if source is None and self.options.hub_kubeconfig is None:
            return None
        hub = self.options.hub_ref
        if hub is None:
            raise OptionsError("--cluster-name / ADDON_STATUS_CLUSTER_NAME: required with a hub")
        if source is None:
            assert self.options.hub_kubeconfig is not None
            source = KubeconfigSource(self.options.hub_kubeconfig)
            self.close_with(source.close)
        metrics = ReplicationMetrics(self.registry, monotonic=self._io_clock.monotonic)
        first, longest = self._hub_backoff

        def replicator() -> HubReplicator:
            assert source is not None
            return HubReplicator(
                source,
                namespace=hub.namespace,
                name=hub.name,
                copy=self.options.hub_copy,
                clock=self._io_clock,
                metrics=metrics,
                resync_interval=self.options.hub_resync.total_seconds(),
                backoff_base=first,
                backoff_max=longest,
                create_missing=self.options.hub_create_missing,
                queue_metrics=self.queue_metrics.queue("hub-replicator"),
                resource=hub.resource,
            )

        return replicator


@contextmanager
def demo_controller(
    *,
    spoke_url: str,
    hub_kubeconfig: Path,
    cluster_name: str,
    config: Config,
    clock: MachineClock,
    hub_create_missing: bool = False,
) -> Iterator[Replica]:
    """A running single replica for `addon-status demo`: an unauthenticated spoke API server
    at `spoke_url`, the hub through `hub_kubeconfig`, the report API on loopback without
    authentication, every port chosen free. The demo moves `clock` and ticks the worker, which
    then fires what is due."""
    loopback = Address(host="127.0.0.1", port=0)
    options = RunOptions(
        metrics_address=loopback,
        probe_address=loopback,
        report_address="127.0.0.1:0",
        insecure=True,
        hub_kubeconfig=hub_kubeconfig,
        cluster_name=cluster_name,
        hub_create_missing=hub_create_missing,
        request_timeout=5.0,
    )
    with client_for_url(spoke_url) as api:
        replica = Replica(options, api_client=api, clock=clock, config=config)
        with replica:
            yield replica


def run_command(args: argparse.Namespace) -> int:
    """`addon-status run`: 0 after SIGTERM/SIGINT, 2 for bad flags, 1 when it cannot start."""

    def start(options: RunOptions) -> Replica:
        replica = Replica(options)
        replica.start()
        return replica

    return run_process("run", RunOptions, args, start)
