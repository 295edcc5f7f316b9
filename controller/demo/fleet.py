"""The demo's running fleet: one OCM-shaped hub (`ocm_hub`) with the hub side and the model of
OCM's controllers (`ocm_writers`), and for each cluster a spoke API server, its klusterlet
(`klusterlet`) and its agent (the controller, as `addon-status run`), which the story may stop
and start again; all on the fleet's clock (`FleetClock`).

Each cluster comes up as OCM brings it up: its klusterlet joins, the addon manager registers
the agent (its hub RoleBinding) and sends its ManifestWork; once registered, the agent starts
and its Deployment turns ready, and the health check says `Available` (the demo waits for
both before the story plays).
"""

from __future__ import annotations

import queue
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, start_http_server

from controller.demo.addon_manager import Rendered
from controller.demo.klusterlet import Klusterlet
from controller.demo.objects import change_object
from controller.demo.ocm_hub import ADDON_MANAGER_TOKEN, HUB_SIDE, HUB_SIDE_NAMESPACE, hub_server
from controller.demo.ocm_model import MANAGED_CLUSTER_ADDON, condition
from controller.demo.scenario_file import Scenario
from controller.demo.scenario_run import SteppedClock, System
from controller.demo.servers import (
    MANAGED_ADDON,
    SPOKE_NAMESPACE,
    agent_kubeconfig,
    agent_tokens,
    change_generation,
    cluster_names,
    hub_kubeconfig,
    hub_status,
    rollout,
    spoke_server,
    spoke_status,
    with_bookkeeping,
)
from controller.kube.kubeconfig import client_for, client_for_url, kubeconfig_yaml
from controller.kube.rest import RestKube
from controller.reporter.client import ReportClient
from kubesim import APIServer
from statemachines.errors import AddonStatusError
from statemachines.object_names import SPOKE_LEASE
from statemachines.reports import Report, Verdict

if TYPE_CHECKING:  # the controller is imported when the demo starts: `--help` stays light
    from controller.demo.ocm_writers import OcmWriters
    from controller.spoke.app import Replica

__all__ = ["Demo", "Fleet", "FleetClock", "running_fleet"]

AGENT = SPOKE_LEASE  # the agent's Deployment on each spoke (the template's)


class FleetClock:
    """The fleet's story time, which the hub, OCM and the klusterlets run on: the furthest of
    the spokes' clocks that count (`counts`: by default all; a fleet whose spokes start apart
    counts a spoke once its play began) and its own, which the epilogue moves past them. Each
    spoke's clock tells it of its moves, and it tells `before_move` / `after_move` of every
    move of the fleet's time, as SteppedClock does."""

    def __init__(self, start: datetime) -> None:
        self._own = start
        self.clocks: list[SteppedClock] = []
        self.counts: Callable[[SteppedClock], bool] = lambda clock: True
        self.before_move: list[Callable[[datetime], None]] = []
        self.after_move: list[Callable[[], None]] = []

    def __call__(self) -> datetime:
        return max([self._own, *(c() for c in self.clocks if self.counts(c))])

    def follow(self, clock: SteppedClock) -> None:
        self.clocks.append(clock)
        clock.before_move.append(self._before)
        clock.after_move.append(self._after)

    def move_to(self, moment: datetime) -> None:
        self._before(moment)
        self._own = max(self._own, moment)
        self._after()

    def _before(self, moment: datetime) -> None:
        if moment > self():
            for before in self.before_move:
                before(moment)

    def _after(self) -> None:
        for after in self.after_move:
            after()


@dataclass
class Demo:
    """One spoke of the demo: its API server, the hub's, its klusterlet, and its agent while it
    runs (`controller`, and the system its player drives)."""

    cluster: str
    spoke: APIServer
    hub: APIServer
    klusterlet: Klusterlet
    share: Rendered
    scenario: Scenario
    clock: SteppedClock
    hub_kubeconfig: Path
    kubeconfig: Path  # the spoke's, for `check spoke` beside the demo
    controller: Replica = field(init=False)  # the agent's, as last started
    system: System = field(init=False)
    on_restart: list[Callable[[System], None]] = field(default_factory=list)
    _agent: ExitStack | None = None

    @property
    def running(self) -> bool:
        return self._agent is not None

    def start_agent(self) -> None:
        """The agent starts (the controller, as the rendered Deployment runs it) and its
        Deployment has a ready replica."""
        from controller.spoke.app import demo_controller

        stack = ExitStack()
        args = _agent_args(self.share)
        controller = stack.enter_context(demo_controller(
            spoke_url=self.spoke.url, hub_kubeconfig=self.hub_kubeconfig,
            cluster_name=args["--cluster-name"],
            hub_create_missing="--hub-create-missing" in args, config=self.scenario.config,
            clock=self.clock,
        ))  # fmt: skip
        client = stack.enter_context(ReportClient(controller.report_url, deadline=10.0))
        heard: queue.SimpleQueue[tuple[Report, Verdict]] = queue.SimpleQueue()
        controller.sink.on_verdict.append(partial(_hear, heard))
        self.system = System(
            worker=controller.worker,
            report=client.report,
            spoke_status=partial(spoke_status, self.spoke),
            hub_status=partial(hub_status, self.hub, self.cluster),
            hub_copy=controller.options.hub_copy,
            change_generation=partial(change_generation, self.spoke),
            change_object=partial(change_object, self.spoke),
            checked=partial(with_bookkeeping, self.spoke),
            heard=partial(_drained, heard),
        )
        self.controller, self._agent = controller, stack
        _agent_ready(self.spoke, ready=True)
        for told in self.on_restart:
            told(self.system)

    def stop_agent(self) -> None:
        """The agent's process ends and its Deployment has no ready replica."""
        if self._agent is not None:
            self._agent.close()
        self._agent = None
        _agent_ready(self.spoke, ready=False)


@dataclass
class Fleet:
    """The running demo: one hub, reached through `kubeconfig`, OCM's writers on it, and a Demo
    per spoke, on `clock`."""

    hub: APIServer
    kubeconfig: Path
    spokes: list[Demo]
    writers: OcmWriters
    clock: FleetClock
    hub_side_metrics: str  # the hub side's /metrics URL


@contextmanager
def running_fleet(
    members: Sequence[tuple[Scenario, SteppedClock]],
    *,
    crds: Sequence[Path] = (),
    clock: FleetClock | None = None,
    patience: float = 10.0,
) -> Iterator[Fleet]:
    """One hub, and for each (scenario, clock) a spoke API server, its klusterlet and its own
    controller replicating into the hub copy in namespace `clusterI`; the hub side (`addon-status
    hub`) mirroring every hub copy onto its cluster's `ManagedClusterAddOn`, beside OCM's writers.
    Every server stamps and tells (`Date`) the story's time: a spoke its own clock, the hub the
    fleet's (`clock`; by default the furthest spoke's)."""
    from controller.demo.ocm_writers import ocm_writers
    from controller.hub.app import hub_side

    shares = rollout(cluster_names(len(members)))
    clock = clock or FleetClock(min(c() for _, c in members))
    for _, member in members:
        clock.follow(member)
    with ExitStack() as stack:
        hub = stack.enter_context(hub_server(shares, agent_tokens(shares), clock=clock))
        temporary = Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="addon-status-demo-"))
        )
        kubeconfig = hub_kubeconfig(hub, temporary)
        manager = temporary / "addon-manager-kubeconfig"
        manager.write_text(kubeconfig_yaml(server=hub.url, token=ADDON_MANAGER_TOKEN), "utf-8")
        lease = f"{HUB_SIDE_NAMESPACE}/{HUB_SIDE}"
        registry = CollectorRegistry()  # served as the hub side's Deployment serves it
        side = stack.enter_context(
            hub_side(kubeconfig, clock=clock, lease=lease, registry=registry)
        )
        metrics = stack.enter_context(_serving(registry))
        clock.after_move.append(side.side.resync)  # OCM's view is judged on the story's time
        manager_api = stack.enter_context(client_for(manager))
        writers = stack.enter_context(ocm_writers(
            kubeconfig, MANAGED_ADDON, time_scale=1.0, now=clock, rendered=shares,
            addon_manager=RestKube(manager_api, request_timeout=5.0),
        ))  # fmt: skip
        clock.after_move.append(writers.tick)
        hub_api = RestKube(stack.enter_context(client_for(kubeconfig)), request_timeout=5.0)
        spokes = []
        for (cluster, share), (scenario, spoke_clock) in zip(shares.items(), members, strict=True):
            spoke = stack.enter_context(spoke_server(scenario, crds, share.agent,
                                                     clock=spoke_clock))  # fmt: skip
            spoke_api = RestKube(stack.enter_context(client_for_url(spoke.url)),
                                 request_timeout=5.0)  # fmt: skip
            klusterlet = Klusterlet(hub_api, spoke_api, cluster=cluster, addon=MANAGED_ADDON,
                                    manifests=share.agent, now=clock)  # fmt: skip
            clock.before_move.append(klusterlet.renew)
            klusterlet.start()
            stack.callback(klusterlet.stop)
            agent = agent_kubeconfig(hub, cluster, temporary)
            spoke_kubeconfig = temporary / cluster / "spoke-kubeconfig"  # beside the agent's
            spoke_kubeconfig.write_text(  # the embedded spoke lets every caller in: any token
                kubeconfig_yaml(server=spoke.url, token="demo", name="spoke", user="admin"), "utf-8"
            )
            spokes.append(Demo(cluster, spoke, hub, klusterlet, share, scenario, spoke_clock,
                               agent, spoke_kubeconfig))  # fmt: skip
        for demo in spokes:  # OCM gives the agent its hub identity first: no 403 to start with
            _wait_for(hub, demo.cluster, "RegistrationApplied", patience)
            demo.start_agent()
            stack.callback(demo.stop_agent)
        for demo in spokes:
            _wait_for(hub, demo.cluster, "Available", patience)
        yield Fleet(hub, kubeconfig, spokes, writers, clock, metrics)


@contextmanager
def _serving(registry: CollectorRegistry) -> Iterator[str]:
    """`registry` served on a free loopback port: the URL of its /metrics."""
    server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
    try:
        yield f"http://127.0.0.1:{server.server_port}/metrics"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _wait_for(hub: APIServer, cluster: str, kind: str, patience: float) -> None:
    """Until OCM says `kind` is True on the cluster's ManagedClusterAddOn."""
    mca = MANAGED_CLUSTER_ADDON
    deadline = time.monotonic() + patience
    while True:
        found = hub.get_object(mca.group, mca.version, mca.plural, cluster, MANAGED_ADDON) or {}
        said = condition((found.get("status") or {}).get("conditions"), kind)
        if said.get("status") == "True":
            return
        if time.monotonic() >= deadline:
            why = f"{said.get('reason')}: {said.get('message')}" if said else "nothing yet"
            raise AddonStatusError(f"{cluster}: OCM did not say {kind} in time ({why})")
        time.sleep(0.01)


def _agent_ready(spoke: APIServer, *, ready: bool) -> None:
    """The agent's Deployment as its controller and the kubelet leave it: one replica, ready
    while the agent runs, unavailable once it stopped (Kubernetes leaves out a count of 0)."""
    deployment = spoke.get_object("apps", "v1", "deployments", SPOKE_NAMESPACE, AGENT)
    if deployment is None:
        return
    generation = deployment["metadata"].get("generation", 1)
    available = ("True", "MinimumReplicasAvailable", "Deployment has minimum availability.")
    if not ready:
        available = ("False", "MinimumReplicasUnavailable",
                     "Deployment does not have minimum availability.")  # fmt: skip
    counts: Mapping[str, int] = (
        {"readyReplicas": 1, "availableReplicas": 1} if ready else {"unavailableReplicas": 1}
    )
    deployment["status"] = {
        "observedGeneration": generation, "replicas": 1, "updatedReplicas": 1, **counts,
        "conditions": [{"type": "Available", "status": available[0], "reason": available[1],
                        "message": available[2]}],
    }  # fmt: skip
    spoke.put_object("apps", "v1", "deployments", deployment)


def _agent_args(share: Rendered) -> dict[str, str]:
    """The rendered controller's flags (`--flag=value` -> value, a switch -> "")."""
    deployment = next(o for o in share.agent if o["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(str(a).partition("=")[::2] for a in container["args"])


def _hear(
    heard: queue.SimpleQueue[tuple[Report, Verdict]], report: Report, verdict: Verdict
) -> None:
    heard.put((report, verdict))


def _drained(heard: queue.SimpleQueue[tuple[Report, Verdict]]) -> list[tuple[Report, Verdict]]:
    out = []
    while not heard.empty():
        out.append(heard.get_nowait())
    return out
