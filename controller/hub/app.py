"""`addon-status hub`: one `HubReplica`, a `controller.process.Process` with the hub side
(`controller.hub.side.HubSide`) added to it.

Two replicas run in the hub-controller Deployment; leader election decides which one writes. A
follower keeps its watch of the hub copies warm and is ready; on becoming leader it queues
every cluster (what the previous leader left undone is unknown), and a leader asks its `Role`
again right before every write, so a lost Lease stops the writes at once. A stopping leader
releases the Lease, so the other replica takes over at once.

`hub_side(...)` runs one replica in process for the demo and tests.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from prometheus_client import CollectorRegistry

from controller.hub.link import ConsoleLink
from controller.hub.metrics import ClusterPaths, ClusterStates, MirrorMetrics
from controller.hub.options import HubOptions
from controller.hub.side import HubSide, PathSettings, Watches
from controller.kube.api import ADDON_KINDS
from controller.kube.backoff import Backoff
from controller.kube.connection import Connection
from controller.kube.kubeconfig import client_for
from controller.kube.rest import RestKube
from controller.ops.clocks import LeaseClock
from controller.process import Process, lease_seam, run_process

__all__ = ["HubReplica", "hub_side", "run_hub_command"]


class HubReplica(Process[HubOptions]):
    """One replica of the hub side: the process with the mirror added, on `api_client` (the
    caller's), else on the client of `--kubeconfig` (its own, closed when it stops). `start()`
    starts the servers, the mirroring and the election (or leads at once without it); `stop()`
    steps down, releases the Lease (unless `release=False`: a crash as the other replica sees
    it) and joins every thread."""

    def __init__(
        self,
        options: HubOptions,
        api_client: Connection | None = None,
        *,
        registry: CollectorRegistry | None = None,
        identity: str | None = None,
        io_clock: LeaseClock | None = None,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
        serve: bool = True,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        api = client_for(options.kubeconfig) if api_client is None else api_client
        super().__init__(
            options,
            lease_kube=lease_seam(api, options),
            registry=registry,
            identity=identity,
            io_clock=io_clock,
            serve=serve,
        )
        if api_client is None:
            self.close_with(api.close)
        self.api_client = api
        try:
            self.side = HubSide(
                RestKube(api, request_timeout=options.request_timeout),
                metrics=MirrorMetrics(self.registry),
                role=self.role,
                addon_name=options.addon_name,
                copy_name=options.copy_name,
                copy_resource=ADDON_KINDS[options.addon_kind],
                namespace_selector=options.namespace_selector,
                resync_interval=options.resync.total_seconds(),
                backoff=backoff,
                watch_seconds=watch_seconds,
                queue_metrics=self.queue_metrics.queue("hub-mirror"),
                watches=Watches(
                    copies=self.watch_metrics.watch("hub-copies"),
                    addons=self.watch_metrics.watch("managed-cluster-addons"),
                    clusters=self.watch_metrics.watch("cluster-namespaces"),
                    managed_clusters=self.watch_metrics.watch("managed-clusters"),
                    agents=self.watch_metrics.watch("agent-addons"),
                ),
                clock=clock or (lambda: datetime.now(UTC)),
                path=PathSettings(
                    window=options.path_window,
                    grace=options.replication_grace,
                    access_interval=options.access_check,
                    agent_addon=options.agent_addon,
                    link=ConsoleLink(options.console_link, options.console_link_text),
                ),
            )
        except BaseException:
            self.close()
            raise
        self.registry.register(ClusterStates(self.side.cluster_states))
        self.registry.register(ClusterPaths(self.side.path_reasons))
        self.add("mirror", self.side, alive=lambda: self.side.alive, ready=lambda: self.side.synced)
        self.on_leading(self.side.resync)
        self.note_on_lease(self.side.lease_notes)


@contextmanager
def hub_side(
    hub_kubeconfig: Path,
    *,
    resync: float = 30.0,
    registry: CollectorRegistry | None = None,
    clock: Callable[[], datetime] | None = None,
    lease: str | None = None,
) -> Iterator[HubReplica]:
    """The hub side running in process on the hub of `hub_kubeconfig` (`addon-status demo`):
    one replica holding the Lease `lease` ("namespace/name", as the rollout's replicas would;
    none: no election), no metrics or probe server; stopped when the block ends. `clock`: the
    time OCM's view is judged at (the demo's story); call `side.resync()` when it moves."""
    options = HubOptions(resync=timedelta(seconds=resync), request_timeout=5.0)
    if lease is not None:
        namespace, _, name = lease.partition("/")
        options = options.model_copy(
            update={"leader_elect": True, "lease_namespace": namespace, "lease_name": name}
        )
    with client_for(hub_kubeconfig) as api:
        replica = HubReplica(options, api, registry=registry, serve=False, clock=clock)
        with replica:
            yield replica


def run_hub_command(args: argparse.Namespace) -> int:
    """`addon-status hub`: 0 after SIGTERM/SIGINT, 2 for bad flags, 1 when it cannot start."""

    def start(options: HubOptions) -> HubReplica:
        replica = HubReplica(options)
        replica.start()
        return replica

    return run_process("hub", HubOptions, args, start)
