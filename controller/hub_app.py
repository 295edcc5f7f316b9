"""`addon-status hub`: the one wiring of a hub-side replica (`controller.hub.side.HubSide`) with
its hub client, leader election on a Lease, metrics and probes.

Two replicas run in the hub-controller Deployment; leader election (`controller.ops.leader`)
decides which one writes. A follower keeps its watch of the hub copies warm and is ready; on
becoming leader it queues every cluster (what the previous leader left undone is unknown), and
a leader asks its `Role` again right before every write, so a lost Lease stops the writes at
once. A stopping leader releases the Lease, so the other replica takes over at once.

`hub_side(...)` runs one replica in process for the demo and tests.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from prometheus_client import CollectorRegistry

from controller.app import replica_identity
from controller.hub.side import HubSide, MirrorMetrics
from controller.kube.kubeconfig import client_for
from controller.kube.official import ApiClient, OfficialKube
from controller.ops.backoff import Backoff
from controller.ops.leader import LeaderElector, LeaderMetrics, LeaseClock, SystemClock
from controller.ops.logs import configure_logging
from controller.ops.metrics import MetricsServer
from controller.ops.probes import ProbeServer
from controller.ops.role import Role
from controller.options import Address
from statemachines.errors import AddonStatusError

__all__ = ["HubReplica", "HubSettings", "hub_side", "run_hub_command"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HubSettings:
    """What `addon-status hub`'s flags say (controller.hub.flags)."""

    addon_name: str = "observability-controller"
    copy_name: str = "observability-addon"
    namespace_selector: str = ""
    resync: float = 300.0
    leader_elect: bool = False
    lease_name: str = "addon-status-hub-controller"
    lease_namespace: str = "default"
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    metrics_address: Address | None = field(default_factory=lambda: Address.parse(":8080"))
    probe_address: Address | None = field(default_factory=lambda: Address.parse(":8081"))
    request_timeout: float = 10.0

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> HubSettings:
        """Raises ValueError naming the flag that cannot be used."""
        if not args.lease_duration > args.renew_deadline > args.retry_period:
            raise ValueError("--lease-duration > --renew-deadline > --retry-period is needed")
        addresses = {}
        for flag in ("metrics_address", "probe_address"):
            try:
                addresses[flag] = Address.parse(getattr(args, flag))
            except ValueError as error:
                raise ValueError(f"--{flag.replace('_', '-')}: {error}") from None
        return cls(
            addon_name=args.addon_name,
            copy_name=args.copy_name,
            namespace_selector=args.namespace_selector,
            resync=args.resync,
            leader_elect=args.leader_elect,
            lease_name=args.lease_name,
            lease_namespace=args.lease_namespace,
            lease_duration=args.lease_duration,
            renew_deadline=args.renew_deadline,
            retry_period=args.retry_period,
            request_timeout=args.request_timeout,
            **addresses,
        )


class HubReplica:
    """One replica of the hub side on `api_client` (which the caller owns). `start()` starts
    the servers, the election (or leads at once without it) and the mirroring; `stop()` steps
    down, releases the Lease (unless `release=False`: a crash as the other replica sees it) and
    joins every thread."""

    def __init__(
        self,
        settings: HubSettings,
        api_client: ApiClient,
        *,
        registry: CollectorRegistry | None = None,
        identity: str | None = None,
        lease_clock: LeaseClock | None = None,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
    ) -> None:
        self.settings = settings
        self.registry = registry or CollectorRegistry()
        self.elector: LeaderElector | None = None
        self.role = Role(elected=False, lease_held=self._lease_held) if settings.leader_elect \
            else Role()
        self.side = HubSide(
            OfficialKube(api_client, request_timeout=settings.request_timeout),
            metrics=MirrorMetrics(self.registry),
            role=self.role,
            addon_name=settings.addon_name,
            copy_name=settings.copy_name,
            namespace_selector=settings.namespace_selector,
            resync_interval=settings.resync,
            backoff=backoff,
            watch_seconds=watch_seconds,
        )
        if settings.leader_elect:
            self.elector = LeaderElector(
                OfficialKube(api_client, request_timeout=settings.renew_deadline / 2),
                namespace=settings.lease_namespace,
                name=settings.lease_name,
                identity=identity or replica_identity(),
                lease_duration=settings.lease_duration,
                renew_deadline=settings.renew_deadline,
                retry_period=settings.retry_period,
                clock=lease_clock or SystemClock(),
                on_started_leading=self._lead,
                on_stopped_leading=lambda: self.role.elect(False),
                metrics=LeaderMetrics(self.registry),
            )
        self.metrics_server = self.probes = None
        if settings.metrics_address is not None:
            address = settings.metrics_address
            self.metrics_server = MetricsServer(self.registry, host=address.host, port=address.port)
        if settings.probe_address is not None:
            self.probes = ProbeServer(
                host=settings.probe_address.host,
                port=settings.probe_address.port,
                liveness={"mirror": lambda: self.side.alive},
                readiness={"hub-copies-listed": lambda: self.side.synced},
            )

    @property
    def leading(self) -> bool:
        return self.role.may_write()

    def start(self) -> None:
        for server in (self.metrics_server, self.probes):
            if server is not None:
                server.start()
        self.side.start()
        if self.elector is not None:
            self.elector.start()

    def stop(self, *, release: bool = True) -> None:
        if self.elector is not None and not self.elector.stop(release=release, timeout=10.0):
            log.error("leader election did not stop in time")
        if not self.side.stop(timeout=self.settings.request_timeout + 1.0):
            log.warning("the hub side is still inside a hub call; it ends with it")
        for server in (self.metrics_server, self.probes):
            if server is not None:
                server.stop()

    def __enter__(self) -> HubReplica:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _lead(self) -> None:
        self.role.elect(True)
        self.side.resync()

    def _lease_held(self) -> bool:
        return self.elector is not None and self.elector.is_leader


@contextmanager
def hub_side(
    hub_kubeconfig: Path, *, resync: float = 30.0, registry: CollectorRegistry | None = None
) -> Iterator[HubReplica]:
    """The hub side running in process on the hub of `hub_kubeconfig` (`addon-status demo`):
    one replica, no election, no metrics or probe server; stopped when the block ends."""
    settings = HubSettings(resync=resync, metrics_address=None, probe_address=None,
                           request_timeout=5.0)
    with client_for(hub_kubeconfig) as api, HubReplica(settings, api, registry=registry) as replica:
        yield replica


def run_hub_command(args: argparse.Namespace) -> int:
    """`addon-status hub`: 0 after SIGTERM/SIGINT, 2 for bad flags, 1 when it cannot start."""
    try:
        settings = HubSettings.from_args(args)
    except ValueError as error:
        print(f"addon-status hub: {error}", file=sys.stderr)
        return 2
    configure_logging(args.log_level)
    stopping = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stopping.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        try:
            api = client_for(Path(args.kubeconfig) if args.kubeconfig else None)
            replica = HubReplica(settings, api)
            replica.start()
        except (AddonStatusError, OSError) as error:
            print(f"addon-status hub: cannot start: {error}", file=sys.stderr)
            return 1
        try:
            while not stopping.wait(0.25):
                pass
        finally:
            replica.stop()
            api.close()  # type: ignore[no-untyped-call]
        log.info("hub side stopped")
        return 0
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
