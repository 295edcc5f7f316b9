"""`addon-status demo`: the whole system on one machine, in under a minute.

An embedded spoke API server and an embedded hub API server (the same Kubernetes-semantics
server the integration tests use, loading the project's CRD), the real controller over HTTP
(the same assembly as `run`), and a simulated endpoint operator and collectors that play a
scenario over the report API (`controller.demo.scenario_run`). Every report is printed with its
verdict, and every change of the addon's conditions on the spoke and on the hub; every `expect`
of the scenario is checked on the CRs, and the exit code says whether all held, like `simulate`.
"""

from __future__ import annotations

import argparse
import json
import queue
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import yaml

from controller.demo.addon_manager import Rendered, render
from controller.demo.objects import change_object
from controller.demo.scenario_file import EPOCH, Scenario, read, start_generation
from controller.demo.scenario_run import Player, Result, SteppedClock, System
from controller.demo.view import View
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.reports.client import ReportClient
from controller.spoke.addon import GROUP, PLURAL, VERSION
from controller.spoke.bookkeeping import KEY, config_map_name
from controller.spoke.options import DEFAULT_NAME, DEFAULT_NAMESPACE
from kubesim import APIServer, UserInfo
from statemachines.errors import AddonStatusError, ScenarioError
from statemachines.reports import Report, Verdict
from statemachines.settings import format_duration
from statemachines.stored import OWNED_FIELDS

if TYPE_CHECKING:  # the controller is imported when the demo starts: `--help` stays light
    from controller.spoke.app import Replica

__all__ = ["Demo", "add_demo_parser", "run_demo", "running"]

ADDON, SPOKE_NAMESPACE = DEFAULT_NAME, DEFAULT_NAMESPACE
MANAGED_ADDON = "addon-status"  # the ClusterManagementAddOn: OCM names each cluster's MCA so
HUB_TOKEN = "demo-hub-token"  # a demo credential for the embedded hub; never a real one
CRD = Path(__file__).with_name("crds") / "observabilityaddons.yaml"  # manifests/base/crd.yaml
# tests/data/upstream/managedclusteraddons.crd.yaml: what the hub side mirrors onto
MCA_CRD = Path(__file__).with_name("crds") / "managedclusteraddons.yaml"
DEFAULT_SCENARIO = Path(__file__).with_name("story.yaml")
# With --clusters 2 or more, the second spoke has an outage of its own (the rest play the story).
SECOND_SCENARIO = Path(__file__).with_name("story_platform_outage.yaml")
# The fleet rollout (manifests/ocm), copied by tests/manifests/ocm.py: every spoke of the demo is
# installed as the addon manager installs it from these.
ROLLOUT = Path(__file__).with_name("ocm")
STAGGER = timedelta(seconds=10)  # scenario time between the starts of two spokes


def rollout(clusters: Sequence[str]) -> dict[str, Rendered]:
    """Each cluster's share of the fleet rollout: the seed AddOnTemplate rendered with the
    rollout's deployment config, as the addon manager renders it."""
    documents = [yaml.safe_load((ROLLOUT / f"{n}.yaml").read_text("utf-8"))
                 for n in ("addontemplate", "addondeploymentconfig")]  # fmt: skip
    return {cluster: render(documents[0], cluster, documents[1]) for cluster in clusters}


def agent_token(cluster: str) -> str:
    """A demo credential standing in for the client certificate the framework issues."""
    return f"demo-agent-{cluster}"


@contextmanager
def hub_server(rendered: Mapping[str, Rendered]) -> Iterator[APIServer]:
    """The hub API server, authorizing with RBAC, as Open Cluster Management leaves it once the
    addon is rolled out: in each cluster's namespace a `ManagedClusterAddOn` of the observed
    addon (what the hub side mirrors onto) and the RoleBinding of the agent's `hubPermissions`;
    each agent authenticates as its registration identity. A request without credentials reads
    everything (kube-apiserver's --anonymous-auth and a role bound to system:unauthenticated):
    kubectl sends no bearer token over plain HTTP, and `kubectl get` is part of the demo."""
    from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
    from controller.hub.mirror import cluster_namespace, managed_cluster_addon

    tokens = {HUB_TOKEN: UserInfo("demo-admin", groups=("system:masters",))}
    for cluster, share in rendered.items():
        tokens[agent_token(cluster)] = UserInfo(share.identity.user, groups=share.identity.groups)
    hub = APIServer([_crd(), _crd(MCA_CRD)], namespaces=["default"], tokens=tokens,
                    anonymous=True, rbac=True)  # fmt: skip
    roles = yaml.safe_load_all((ROLLOUT / "clusterroles.yaml").read_text("utf-8"))
    with hub:
        for obj in [*_readers(), *roles]:
            hub.put_object("rbac.authorization.k8s.io", "v1", f"{obj['kind'].lower()}s", obj)
        for cluster, share in rendered.items():
            hub.put_object("", "v1", "namespaces", cluster_namespace(cluster))
            addon = managed_cluster_addon(cluster, MANAGED_ADDON)
            hub.put_object(MCA.group, MCA.version, MCA.plural, addon)
            for binding in share.hub:
                hub.put_object("rbac.authorization.k8s.io", "v1", "rolebindings", binding)
        yield hub


def _readers() -> list[dict[str, Any]]:
    rbac = "rbac.authorization.k8s.io"
    ref = {"apiGroup": rbac, "kind": "ClusterRole", "name": "demo-readers"}
    return [
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": {"name": "demo-readers"},
         "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]},
                   {"nonResourceURLs": ["*"], "verbs": ["get"]}]},
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "demo-readers"}, "roleRef": ref,
         "subjects": [{"apiGroup": rbac, "kind": "Group", "name": "system:unauthenticated"}]},
    ]  # fmt: skip


@contextmanager
def spoke_server(
    scenario: Scenario, crds: Sequence[Path] = (), agent: Sequence[Mapping[str, Any]] = ()
) -> Iterator[APIServer]:
    """A spoke API server with the addon CR at the scenario's starting generation, and the
    `agent` manifests as the work agent applies them (the CRD is served from its file); it also
    serves `crds` (the kinds of watched objects, e.g. cert-manager's Certificate)."""
    with APIServer([_crd(), *crds], namespaces=["default", SPOKE_NAMESPACE]) as spoke:
        spoke.put_object(GROUP, VERSION, PLURAL, _addon(SPOKE_NAMESPACE))
        for obj in agent:
            if obj["kind"] != "CustomResourceDefinition":
                group, _, version = obj["apiVersion"].rpartition("/")
                spoke.put_object(
                    group, version, spoke.plural_of(obj["apiVersion"], obj["kind"]), obj
                )
        if start_generation(scenario) != 1:
            _change_generation(spoke, start_generation(scenario))
        yield spoke


def _crd(path: Path = CRD) -> Path:
    if not path.exists():
        raise AddonStatusError(f"{path}: the CRD is missing; reinstall addon-status")
    return path


def _addon(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ObservabilityAddon",
        "metadata": {"name": ADDON, "namespace": namespace},
        "spec": {"enableMetrics": True, "interval": 300},
    }


def cluster_names(count: int) -> list[str]:
    """`cluster1` ... `clusterN`: each spoke's namespace on the hub."""
    return [f"cluster{i}" for i in range(1, count + 1)]


def hub_kubeconfig(hub: APIServer, directory: Path) -> Path:
    path = directory / "hub-kubeconfig"
    path.write_text(kubeconfig_yaml(server=hub.url, token=HUB_TOKEN, user="spoke"), "utf-8")
    path.chmod(0o600)
    return path


def add_demo_parser(sub: Any) -> None:
    demo = sub.add_parser(
        "demo",
        help="run spoke + hub API servers, the controller and simulated reporters",
        description="Plays a scenario end to end and checks every `expect` on the CRs: exit 0 "
        "when all hold, 1 when one fails, 2 when the file is invalid (like `simulate`).",
    )
    demo.add_argument(
        "--scenario", help="scenario YAML to play and check (default: the built-in story)"
    )
    demo.add_argument(
        "--time-scale",
        type=float,
        default=None,
        help="simulated seconds per real second (default: 60 for the built-in story; with "
        "--scenario, no waiting: each step as soon as the last one settled)",
    )
    demo.add_argument(
        "--clusters",
        type=int,
        default=1,
        help="spokes replicating into one hub, each with its own controller, started "
        f"{STAGGER.total_seconds():g} s of scenario time apart; the second has an outage of its "
        "own (with the built-in story); default 1",
    )
    demo.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many real seconds (default: when the story is over)",
    )
    demo.add_argument(
        "--crd",
        action="append",
        default=[],
        metavar="FILE",
        help="a CRD file the embedded spokes serve too, for the kinds of watched objects "
        "(repeatable; e.g. tests/data/crds/certificates.cert-manager.io.yaml)",
    )
    demo.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    crds = [Path(p) for p in args.crd]
    problem = _bad_flag(args.clusters, crds)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    paths = [Path(args.scenario) if args.scenario else DEFAULT_SCENARIO] * args.clusters
    if not args.scenario and args.clusters > 1:
        paths[1] = SECOND_SCENARIO
    scenarios: dict[Path, Scenario] = {}
    for path in paths:
        try:
            scenarios[path] = scenarios.get(path) or read(path)
        except OSError as error:
            print(f"{path}: cannot read: {error.strerror}", file=sys.stderr)
            return 2
        except ScenarioError as error:
            print(f"{path}: invalid scenario: {error}", file=sys.stderr)
            return 2
    scale = args.time_scale if args.time_scale is not None else None if args.scenario else 60.0
    if scale is not None and scale <= 0:
        print("--time-scale must be positive", file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, _stopper(stop))
    try:
        played = [scenarios[p] for p in paths]
        result = _demo(played, scale=scale, duration=args.duration, stop=stop, crds=crds)
    except AddonStatusError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, previous)
    where = f"{paths[0]}: " if len(paths) == 1 else ""  # a fleet's failures name the cluster
    for failure in result.failures:
        print(f"{where}{failure}", file=sys.stderr)
    return 0 if result.ok else 1


def _bad_flag(clusters: int, crds: Sequence[Path]) -> str | None:
    if clusters < 1:
        return "--clusters must be at least 1"
    missing = next((crd for crd in crds if not crd.is_file()), None)
    return f"--crd {missing}: no such file" if missing else None


def _stopper(stop: threading.Event) -> Callable[[int, FrameType | None], None]:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    return handle


@dataclass(frozen=True)
class Demo:
    """One running spoke of the demo: its API server, the hub's, its controller, and the
    system its player drives."""

    cluster: str
    spoke: APIServer
    hub: APIServer
    controller: Replica
    system: System


@dataclass(frozen=True)
class Fleet:
    """The running demo: one hub, reached through `kubeconfig`, and a Demo per spoke."""

    hub: APIServer
    kubeconfig: Path
    spokes: list[Demo]


@contextmanager
def running(
    scenario: Scenario, clock: SteppedClock, *, crds: Sequence[Path] = ()
) -> Iterator[Demo]:
    """The servers and the controller for `scenario`'s configuration, on `clock`."""
    with running_fleet([(scenario, clock)], crds=crds) as fleet:
        yield fleet.spokes[0]


@contextmanager
def running_fleet(
    members: Sequence[tuple[Scenario, SteppedClock]], *, crds: Sequence[Path] = ()
) -> Iterator[Fleet]:
    """One hub, and for each (scenario, clock) a spoke API server and its own controller
    replicating into the hub copy in namespace `clusterI`, and the hub side (`addon-status
    hub`) mirroring every hub copy onto its cluster's `ManagedClusterAddOn`."""
    from controller.demo.ocm_writers import ocm_writers
    from controller.hub.app import hub_side
    from controller.spoke.app import demo_controller

    shares = rollout(cluster_names(len(members)))
    with ExitStack() as stack:
        hub = stack.enter_context(hub_server(shares))
        temporary = Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="addon-status-demo-"))
        )
        kubeconfig = hub_kubeconfig(hub, temporary)
        stack.enter_context(hub_side(kubeconfig))
        # OCM's own writers of the ManagedClusterAddOns (Available, Progressing), beside it
        stack.enter_context(ocm_writers(kubeconfig, MANAGED_ADDON, time_scale=60.0))
        spokes = []
        for (cluster, share), (scenario, clock) in zip(shares.items(), members, strict=True):
            spoke = stack.enter_context(spoke_server(scenario, crds, share.agent))
            args = _agent_args(share)
            controller = stack.enter_context(
                demo_controller(
                    spoke_url=spoke.url,
                    hub_kubeconfig=_agent_kubeconfig(hub, cluster, temporary),
                    cluster_name=args["--cluster-name"],
                    hub_create_missing="--hub-create-missing" in args,
                    config=scenario.config,
                    clock=clock,
                )
            )
            client = stack.enter_context(ReportClient(controller.report_url, deadline=10.0))
            heard: queue.SimpleQueue[tuple[Report, Verdict]] = queue.SimpleQueue()
            controller.sink.on_verdict.append(partial(_hear, heard))
            system = System(
                worker=controller.worker,
                report=client.report,
                spoke_status=partial(_spoke_status, spoke),
                hub_status=partial(_status, hub, cluster),
                hub_copy=controller.options.hub_copy,
                change_generation=partial(_change_generation, spoke),
                change_object=partial(change_object, spoke),
                checked=partial(_with_bookkeeping, spoke),
                heard=partial(_drained, heard),
            )
            spokes.append(Demo(cluster, spoke, hub, controller, system))
        yield Fleet(hub, kubeconfig, spokes)


def _agent_args(share: Rendered) -> dict[str, str]:
    """The rendered controller's flags (`--flag=value` -> value, a switch -> "")."""
    deployment = next(o for o in share.agent if o["kind"] == "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(str(a).partition("=")[::2] for a in container["args"])


def _agent_kubeconfig(hub: APIServer, cluster: str, directory: Path) -> Path:
    """The agent's hub kubeconfig, where the framework would mount its Secret."""
    path = directory / cluster / "hub-kubeconfig" / "kubeconfig"
    path.parent.mkdir(parents=True)
    path.write_text(
        kubeconfig_yaml(server=hub.url, token=agent_token(cluster), user="agent"), "utf-8"
    )
    path.chmod(0o600)
    return path


def _demo(
    scenarios: Sequence[Scenario],
    *,
    scale: float | None,
    duration: float | None,
    stop: threading.Event,
    crds: Sequence[Path] = (),
) -> Result:
    from controller.demo.fleet_line import FleetLine  # the client: only once the demo starts

    starts = [EPOCH + i * STAGGER for i in range(len(scenarios))]
    clocks = [SteppedClock(start) for start in starts]
    if duration is not None:
        timer = threading.Timer(duration, stop.set)
        timer.daemon = True
        timer.start()
    fleet_wide = len(scenarios) > 1
    with running_fleet(list(zip(scenarios, clocks, strict=True)), crds=crds) as fleet:
        _banner(scenarios[0], fleet, scale=scale)
        views = [
            View(clock, EPOCH, sys.stdout, label=demo.cluster if fleet_wide else "")
            for demo, clock in zip(fleet.spokes, clocks, strict=True)
        ]
        players = [
            Player(scenario, demo.system, clock=clock, view=view, scale=scale, stop=stop,
                   start=start)
            for scenario, demo, clock, view, start in zip(
                scenarios, fleet.spokes, clocks, views, starts, strict=True)
        ]  # fmt: skip
        if fleet_wide:
            fleet_now = lambda: max(clock() for clock in clocks)  # noqa: E731
            line = FleetLine(fleet.kubeconfig, now=fleet_now, view=View(fleet_now, EPOCH,
                                                                        sys.stdout))  # fmt: skip
            with line, ThreadPoolExecutor(len(players), "demo-player") as pool:
                results = list(pool.map(Player.run, players))
        else:
            results = [players[0].run()]
        if duration is not None:
            with ThreadPoolExecutor(len(players), "demo-follower") as pool:
                list(pool.map(Player.follow, players))
        closing = [  # the CRs as they are at exit
            (
                View.summary("spoke", d.system.spoke_status()),
                View.summary("hub", d.system.hub_status()),
            )
            for d in fleet.spokes
        ]
        spoke_writes = sum(
            d.spoke.count_requests(resource=PLURAL, subresource="status") for d in fleet.spokes
        )
        hub_writes = fleet.hub.count_requests(resource=PLURAL, subresource="status")
    result = _merged(results, [d.cluster for d in fleet.spokes] if fleet_wide else [""])
    held = "every expectation held" if result.ok else f"{len(result.failures)} FAILED"
    unplayed = result.steps - result.played
    stopped = f"; stopped before the last {unplayed} step(s)" if unplayed else ""
    print(
        f"\n{result.reports} reports ({result.refused} refused); {spoke_writes} spoke status "
        f"writes, {hub_writes} hub status writes.\n"
        f"{result.checked} checked steps: {held}{stopped}."
    )
    for demo, (spoke, hub) in zip(fleet.spokes, closing, strict=True):
        who = f"{demo.cluster} " if fleet_wide else ""
        print(f"{who}spoke: {spoke}\n{who}hub:   {hub}")
    return result


def _hear(
    heard: queue.SimpleQueue[tuple[Report, Verdict]], report: Report, verdict: Verdict
) -> None:
    heard.put((report, verdict))


def _drained(heard: queue.SimpleQueue[tuple[Report, Verdict]]) -> list[tuple[Report, Verdict]]:
    out = []
    while not heard.empty():
        out.append(heard.get_nowait())
    return out


def _merged(results: Sequence[Result], clusters: Sequence[str]) -> Result:
    """The fleet's result: every count added up, every failure prefixed with its cluster."""
    merged = Result(sum(r.steps for r in results))
    for result, cluster in zip(results, clusters, strict=True):
        merged.played += result.played
        merged.checked += result.checked
        merged.reports += result.reports
        merged.refused += result.refused
        merged.failures += [f"{cluster}: {f}" if cluster else f for f in result.failures]
    return merged


def _status(server: APIServer, namespace: str) -> dict[str, Any]:
    obj = server.get_object(GROUP, VERSION, PLURAL, namespace, ADDON) or {}
    status: dict[str, Any] = obj.get("status") or {}
    return status


def _spoke_status(server: APIServer) -> dict[str, Any]:
    """The spoke CR's status; where the profile keeps its bookkeeping in the ConfigMap (acm),
    with the collectors' machines from there, as `simulate` shows them."""
    status = _status(server, SPOKE_NAMESPACE)
    kept = server.get_object("", "v1", "configmaps", SPOKE_NAMESPACE, config_map_name(ADDON))
    if kept is not None and "collectors" not in status:
        status["collectors"] = json.loads(kept["data"][KEY]).get("collectors") or []
    return status


def _with_bookkeeping(server: APIServer, status: Mapping[str, Any]) -> dict[str, Any]:
    """`status` with what the profile keeps in the bookkeeping ConfigMap instead (acm): the
    story's fields (history, versions, ...) and the conditions the CR does not carry (`Ready`),
    as `simulate` shows them."""
    kept = server.get_object("", "v1", "configmaps", SPOKE_NAMESPACE, config_map_name(ADDON))
    if kept is None:
        return dict(status)
    book = json.loads(kept["data"][KEY])
    on_cr = {c.get("type") for c in status.get("conditions") or []}
    extra = [c for c in book.get("conditions") or [] if c.get("type") not in on_cr]
    story = {k: book[k] for k in OWNED_FIELDS if k in book and k not in status}
    return {**status, **story, "conditions": [*(status.get("conditions") or []), *extra]}


def _change_generation(server: APIServer, generation: int) -> None:
    """The spoke CR as the API server stores it once its spec changed up to `generation` (which
    the server owns: the demo writes it straight to storage; the watch delivers it)."""
    obj = server.get_object(GROUP, VERSION, PLURAL, SPOKE_NAMESPACE, ADDON)
    if obj is None:
        raise AddonStatusError(f"the addon CR {SPOKE_NAMESPACE}/{ADDON} is gone")
    obj["metadata"]["generation"] = generation
    server.put_object(GROUP, VERSION, PLURAL, obj)


def _banner(scenario: Scenario, fleet: Fleet, *, scale: float | None) -> None:
    last = max(s.at for s in scenario.steps)
    if scale is None:
        pace = "none: each step as soon as the last one settled, on the scenario's clock"
    else:
        pace = (
            f"{scale:g}x: the story's {format_duration(last)} take "
            f"{last.total_seconds() / scale:.0f} s; Ctrl-C ends it"
        )
    lines = [f"addon-status demo: {scenario.name}"]
    for demo in fleet.spokes:
        who = f"{demo.cluster}: " if len(fleet.spokes) > 1 else ""
        report_url, metrics_url = demo.controller.report_url, demo.controller.metrics_url
        lines += [
            f"  {who}spoke API server  {demo.spoke.url}   (CR {SPOKE_NAMESPACE}/{ADDON})",
            f"  {who}report API        {report_url}/v1/reports   (curl {report_url}/openapi.json)",
            f"  {who}metrics           {metrics_url}/metrics",
        ]
    copies = ", ".join(f"{d.cluster}/{ADDON}" for d in fleet.spokes)
    lines += [
        f"  hub API server    {fleet.hub.url}   (CR {copies})",
        f"  hub kubeconfig  {fleet.kubeconfig}",
        f"                    (addon-status fleet --kubeconfig {fleet.kubeconfig} --watch)",
        f"  time scale        {pace}",
        "",
    ]
    print("\n".join(lines), flush=True)
