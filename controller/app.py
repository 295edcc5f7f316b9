"""A whole spoke controller, one `Replica` of it: the spoke side (`spoke.SpokeController`), the
report API in front of its worker, hub replication behind it, and leader election deciding
which replica does the writing.

Who does what while leading. A leader judges reports, writes the spoke CR's status and copies it
to the hub; a follower keeps its watch and its probes and is ready, but answers reports with
503, `Retry-After` and a closed connection (`NotLeader`), so that the reporter's retry may be
balanced to the leader (a follower that is not ready would block rolling updates and drains). On
becoming leader, the worker rebuilds its machines from the CR, where the previous leader left
them, and hands the status it found to replication; on stepping down it stops judging and
writing at once, the answers still waiting for a write get `NotLeader`, and replication stops. A
replica shutting down steps down, lets the worker drain, gives the hub a moment to receive the
last status, and only then releases the Lease, so that the other replica takes over at once.
Without `--leader-elect` the single replica leads from start to stop.

Each leadership term replicates through a fresh `HubReplicator`: a new term starts from what
the CR says, never from a status an earlier term published (an older status must never land
on the hub over a newer one that another replica wrote meanwhile).

Leadership is one state, the replica's `Role` (`controller.ops.role`): leader election sets
its verdict, and every writer asks it `may_write()`.

Tests and the demo build a `Replica` in process with an injected clock, spoke `ApiClient` and
hub client source, on port 0 everywhere (`report_url`, `metrics_url`, `probe_url` say where).
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
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from prometheus_client import CollectorRegistry

from controller.health.watch import ObjectWatches, health_watches
from controller.hub.metrics import ReplicationMetrics
from controller.hub.replicator import ClientSource, HubReplicator
from controller.kube.addons import GROUP, PLURAL, AddonStore
from controller.kube.api import NotFoundError
from controller.kube.kubeconfig import KubeconfigSource, client_for, client_for_url
from controller.kube.objects import object_sources
from controller.kube.official import ApiClient, OfficialKube
from controller.ops.leader import LeaderElector, LeaderMetrics, LeaseClock, SystemClock
from controller.ops.logs import configure_logging
from controller.ops.role import Role
from controller.options import Address, OptionsError, RunOptions
from controller.reports.cli import build_report_server
from controller.reports.server import ReportServer
from controller.spoke.controller import Service, ServiceFactory, SpokeController
from controller.spoke.worker import Clock, Worker, WorkerError, utc_now
from statemachines.config import Config
from statemachines.errors import AddonStatusError
from statemachines.related import RelatedObject

__all__ = ["Replica", "demo_controller", "related_objects", "replica_identity", "run_command"]

log = logging.getLogger(__name__)

_HANDOVER = 2.0  # seconds a stopping leader gives the hub to receive its last status


def replica_identity(environ: Mapping[str, str] = os.environ) -> str:
    """The Lease holder's name: the pod's (from the downward API), else the host's with a
    random suffix, so two processes on one machine never share it."""
    return environ.get("POD_NAME") or f"{socket.gethostname()}_{secrets.token_hex(4)}"


class _Leadership:
    """What only the leader does beyond the worker — hub replication — and when.

    With an elector, its callbacks `lead` and `step_down` run on the election thread; without,
    `start` leads and `stop` steps down. Both paths are serialized by a lock, since a
    shutdown may meet a lost Lease.
    """

    def __init__(
        self,
        worker: Worker,
        *,
        replication: Callable[[], HubReplicator] | None,
        drain_timeout: float,
    ) -> None:
        self.elector: LeaderElector | None = None
        self.release = True  # False: a crash as the other replicas see it
        self._worker = worker
        self._replication = replication
        self._replicator = replication() if replication else None  # for the status read at start
        self._terms = 0
        self._drain_timeout = drain_timeout
        self._stopping = False
        self._lock = threading.Lock()
        worker.on_status_written.append(self.publish)

    @property
    def replicator(self) -> HubReplicator | None:
        """The replicator of the current (or last) leadership term."""
        return self._replicator

    def publish(self, status: dict[str, Any]) -> None:
        """The worker's hook after every status write (and the status read on leading)."""
        replicator = self._replicator
        if replicator is not None:
            replicator.publish(status)

    def start(self) -> None:
        self._stopping = False
        if self.elector is not None:
            self.elector.start()
        else:
            self.lead()

    def stop(self) -> None:
        self._stopping = True
        if self.elector is None:
            self.step_down()
        elif not self.elector.stop(release=self.release, timeout=2 * self._drain_timeout + 10):
            log.error("leader election did not stop in time")

    def lead(self) -> None:
        with self._lock:
            if self._replication is not None:
                if self._terms:  # this term must not resume an earlier term's publications
                    self._replicator = self._replication()
                self._terms += 1
                assert self._replicator is not None
                self._replicator.start()
            if self.elector is not None:
                self._worker.set_leader(True)

    def step_down(self) -> None:
        with self._lock:
            if self.elector is not None:
                self._worker.set_leader(False)
            self._drain()
            replicator = self._replicator
            if replicator is None:
                return
            if self._stopping and self.release and not replicator.wait_synced(_HANDOVER):
                log.warning("stopping before the hub copy caught up; the next leader will")
            if not replicator.stop(timeout=self._drain_timeout):
                log.warning("hub replication is still inside a hub call; it ends with it")

    def _drain(self) -> None:
        """Wait until the worker handled everything queued before the step-down."""
        try:
            self._worker.tick().result(timeout=self._drain_timeout)
        except (FutureTimeout, WorkerError) as error:
            log.warning("the worker did not drain before the step-down: %s", error or "timeout")


def related_objects(options: RunOptions) -> list[RelatedObject]:
    """What the shell adds to `status.relatedObjects` (section 9): the addon CR, and the Lease
    when electing. The health rules' objects and the configuration's come with the Config."""
    addon = options.ref
    found = [RelatedObject(GROUP, PLURAL, addon.name, addon.namespace)]
    if options.leader_elect:
        lease = options.lease_ref
        found.append(RelatedObject("coordination.k8s.io", "leases", lease.name, lease.namespace))
    return found


class Replica:
    """One replica of the spoke controller, from `RunOptions`; see the module docstring.

    `start()` raises (and leaves nothing running) when the CR cannot be read or a server
    cannot listen; `stop()` is idempotent and joins every thread it started.
    """

    def __init__(
        self,
        options: RunOptions,
        *,
        api_client: ApiClient | None = None,
        hub_source: ClientSource | None = None,
        clock: Clock = utc_now,
        lease_clock: LeaseClock | None = None,
        config: Config | None = None,
        registry: CollectorRegistry | None = None,
        identity: str | None = None,
        hub_backoff: tuple[float, float] = (0.5, 60.0),
        watch_seconds: int = 300,
        max_wait: float = 30.0,
    ) -> None:
        """`clock` drives the state machines; `lease_clock` the Lease and hub retries (real
        time unless a test moves it). `hub_source` replaces the `--hub-kubeconfig` file;
        `hub_backoff` is (first, longest) wait between failed hub calls; `max_wait` is the
        longest the worker sleeps without looking at `clock` (the worker turns a timer's
        distance on `clock` into real seconds, so a faster clock needs a short one)."""
        self.options = options
        self.identity = identity or replica_identity()
        self.registry = registry or CollectorRegistry()
        self._own_client = api_client is None
        self.api_client = api_client if api_client is not None else client_for(options.kubeconfig)
        self.config = (config or options.config()).with_related(*related_objects(options))
        self._lease_clock = lease_clock or SystemClock()
        self._hub_source = hub_source
        self._own_hub_source: KubeconfigSource | None = None
        self._hub_backoff = hub_backoff
        self.report_server: ReportServer | None = None
        self._leadership: _Leadership | None = None
        self._watch_seconds = watch_seconds
        services: list[ServiceFactory] = [self._build_leadership]
        if self.config.resources:
            services.append(self._build_health_watches)
        if options.leader_elect:
            self.role = Role(elected=False, lease_held=self._lease_held)
        else:
            self.role = Role()
        store = AddonStore(
            OfficialKube(self.api_client, request_timeout=options.request_timeout),
            options.ref,
            instance=os.environ.get("POD_NAME") or socket.gethostname(),
        )
        try:
            self.spoke = SpokeController(
                store,
                self.config,
                metrics_address=options.metrics_address,
                probe_address=options.probe_address,
                clock=clock,
                registry=self.registry,
                report_server=self._build_report_server,
                services=services,
                role=self.role,
                watch_seconds=watch_seconds,
                max_wait=max_wait,
            )
        except BaseException:
            self._close_client()
            raise

    # ---- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        try:
            self.spoke.start()
        except BaseException:
            self._close_client()
            raise

    def stop(self, *, release: bool = True) -> None:
        """Stop everything; `release=False` leaves the Lease to expire (a crash, as the other
        replica sees it)."""
        if self._leadership is not None:
            self._leadership.release = release
        self.spoke.stop()
        self._close_client()

    def __enter__(self) -> Replica:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- what tests, the demo and the probes look at ---------------------------------------

    @property
    def worker(self) -> Worker:
        return self.spoke.worker

    @property
    def elector(self) -> LeaderElector | None:
        return self._leadership.elector if self._leadership else None

    @property
    def replicator(self) -> HubReplicator | None:
        """The current term's hub replication; None without a hub."""
        return self._leadership.replicator if self._leadership else None

    @property
    def leading(self) -> bool:
        return self.worker.leading

    @property
    def report_url(self) -> str:
        assert self.report_server is not None
        return self.report_server.url

    @property
    def metrics_url(self) -> str:
        return _url(self.options.metrics_address, self.spoke.metrics_server.port)

    @property
    def probe_url(self) -> str:
        return _url(self.options.probe_address, self.spoke.probes.port)

    # ---- assembly ----------------------------------------------------------------------------

    def _lease_held(self) -> bool:
        elector = self.elector
        return elector is not None and elector.is_leader

    def _build_report_server(self, worker: Worker) -> ReportServer:
        self.report_server = build_report_server(
            self.options.report_args(),
            sink=worker,
            config=self.config,
            registry=self.registry,
            kube=lambda: OfficialKube(self.api_client, request_timeout=5.0),
        )
        return self.report_server

    def _build_leadership(self, worker: Worker) -> _Leadership:
        options = self.options
        drain = options.request_timeout + 1.0
        replication = self._replication()
        leadership = _Leadership(worker, replication=replication, drain_timeout=drain)
        if options.leader_elect:
            lease = options.lease_ref
            renew_deadline = options.renew_deadline.total_seconds()
            leadership.elector = LeaderElector(
                OfficialKube(self.api_client, request_timeout=renew_deadline / 2),
                namespace=lease.namespace,
                name=lease.name,
                identity=self.identity,
                lease_duration=options.lease_duration.total_seconds(),
                renew_deadline=renew_deadline,
                retry_period=options.retry_period.total_seconds(),
                clock=self._lease_clock,
                on_started_leading=leadership.lead,
                on_stopped_leading=leadership.step_down,
                metrics=LeaderMetrics(self.registry),
            )
        self._leadership = leadership
        return leadership

    def _build_health_watches(self, worker: Worker) -> ObjectWatches:
        """Section 8: every configured object watched; its changes go to the worker."""
        sources = object_sources(self.api_client, request_timeout=self.options.request_timeout)
        return health_watches(
            self.config.resources,
            sources,
            worker.observe_object,
            watch_seconds=self._watch_seconds,
        )

    def _replication(self) -> Callable[[], HubReplicator] | None:
        """Builds one term's replicator; None when there is no hub to replicate to."""
        source = self._hub_source
        if source is None and self.options.hub_kubeconfig is None:
            return None
        hub = self.options.hub_ref
        if hub is None:
            raise OptionsError("--cluster-name / ADDON_STATUS_CLUSTER_NAME: required with a hub")
        if source is None:
            assert self.options.hub_kubeconfig is not None
            source = self._own_hub_source = KubeconfigSource(self.options.hub_kubeconfig)
        metrics = ReplicationMetrics(self.registry, monotonic=self._lease_clock.monotonic)
        first, longest = self._hub_backoff

        def replicator() -> HubReplicator:
            return HubReplicator(
                source,
                namespace=hub.namespace,
                name=hub.name,
                copy=self.options.hub_copy,
                clock=self._lease_clock,
                metrics=metrics,
                resync_interval=self.options.hub_resync.total_seconds(),
                backoff_base=first,
                backoff_max=longest,
                create_missing=self.options.hub_create_missing,
            )

        return replicator

    def _close_client(self) -> None:
        if self._own_hub_source is not None:
            self._own_hub_source.close()
        if self._own_client:
            self.api_client.close()  # type: ignore[no-untyped-call]
            self._own_client = False


def _url(address: Address, port: int) -> str:
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(address.host, address.host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@contextmanager
def demo_controller(
    *,
    spoke_url: str,
    hub_kubeconfig: Path,
    cluster_name: str,
    config: Config,
    clock: Clock,
) -> Iterator[Replica]:
    """A running single replica for `addon-status demo`: an unauthenticated spoke API server
    at `spoke_url`, the hub through `hub_kubeconfig`, the report API on loopback without
    authentication, every port chosen free; the worker looks at the (accelerated) clock every
    50 ms, so that a dampening window ends on time on the demo's timeline."""
    loopback = Address(host="127.0.0.1", port=0)
    options = RunOptions(
        metrics_address=loopback,
        probe_address=loopback,
        report_address="127.0.0.1:0",
        insecure=True,
        hub_kubeconfig=hub_kubeconfig,
        cluster_name=cluster_name,
        request_timeout=5.0,
    )
    with client_for_url(spoke_url) as api:
        replica = Replica(options, api_client=api, clock=clock, config=config, max_wait=0.05)
        with replica:
            yield replica


def run_command(args: argparse.Namespace) -> int:
    """`addon-status run`: 0 after SIGTERM/SIGINT, 2 for bad flags, 1 when it cannot start."""
    try:
        options = RunOptions.from_args(args, os.environ)
    except OptionsError as error:
        print(f"addon-status run: {error}", file=sys.stderr)
        return 2
    configure_logging(options.log_level)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("signal received; stopping", extra={"signal": signal.Signals(signum).name})
        stopping.set()

    # Before anything starts: a SIGTERM during the start must stop us cleanly, not kill us.
    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        return _run_until_stopped(Replica, options, stopping)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _run_until_stopped(
    replica_type: Callable[[RunOptions], Service], options: RunOptions, stopping: threading.Event
) -> int:
    try:
        replica = replica_type(options)
        replica.start()
    except NotFoundError:
        print(
            f"addon-status run: the addon CR {options.ref} does not exist "
            f"(kind ObservabilityAddon; set --addon-name / --addon-namespace)",
            file=sys.stderr,
        )
        return 1
    except AddonStatusError as error:
        print(f"addon-status run: cannot start: {error}", file=sys.stderr)
        return 1
    try:
        while not stopping.wait(0.25):
            pass
    finally:
        replica.stop()
    log.info("spoke controller stopped")
    return 0
