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
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from controller.demo.scenario_file import (
    EPOCH,
    ObjectChange,
    Scenario,
    read,
    start_generation,
)
from controller.demo.scenario_run import Player, Result, SteppedClock, System
from controller.demo.view import View
from controller.kube.addons import GROUP, PLURAL, VERSION
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.options import DEFAULT_NAME, DEFAULT_NAMESPACE
from controller.reports.client import ReportClient
from controller.spoke.bookkeeping import KEY, config_map_name
from kubesim import APIServer, UserInfo
from statemachines.configuration import guess_plural
from statemachines.errors import AddonStatusError, ScenarioError
from statemachines.settings import format_duration
from statemachines.stored import OWNED_FIELDS

if TYPE_CHECKING:  # the controller is imported when the demo starts: `--help` stays light
    from controller.app import Replica

__all__ = ["Demo", "add_demo_parser", "run_demo", "running"]

ADDON, SPOKE_NAMESPACE, CLUSTER = DEFAULT_NAME, DEFAULT_NAMESPACE, "cluster1"
HUB_TOKEN = "demo-hub-token"  # a demo credential for the embedded hub; never a real one
CRD = Path(__file__).with_name("crds") / "observabilityaddons.yaml"  # manifests/base/crd.yaml
DEFAULT_SCENARIO = Path(__file__).with_name("story.yaml")


@contextmanager
def api_servers(crds: Sequence[Path] = ()) -> Iterator[tuple[APIServer, APIServer]]:
    """A spoke and a hub API server, each with its addon CR; the spoke also serves `crds`
    (the kinds of watched objects, e.g. cert-manager's Certificate)."""
    if not CRD.exists():
        raise AddonStatusError(f"{CRD}: the CRD is missing; reinstall addon-status")
    spoke = APIServer([CRD, *crds], namespaces=["default", SPOKE_NAMESPACE])
    hub_tokens = {HUB_TOKEN: UserInfo("hub-writer")}
    hub = APIServer([CRD], namespaces=["default", CLUSTER], tokens=hub_tokens)
    with spoke, hub:
        spoke.put_object(GROUP, VERSION, PLURAL, _addon(SPOKE_NAMESPACE))
        hub.put_object(GROUP, VERSION, PLURAL, _addon(CLUSTER))
        yield spoke, hub


def _addon(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ObservabilityAddon",
        "metadata": {"name": ADDON, "namespace": namespace},
        "spec": {"enableMetrics": True, "interval": 300},
    }


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
        help="a CRD file the embedded spoke serves too, for the kinds of watched objects "
        "(repeatable; e.g. tests/data/crds/certificates.cert-manager.io.yaml)",
    )
    demo.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    path = Path(args.scenario) if args.scenario else DEFAULT_SCENARIO
    try:
        scenario = read(path)
    except OSError as error:
        print(f"{path}: cannot read: {error.strerror}", file=sys.stderr)
        return 2
    except ScenarioError as error:
        print(f"{path}: invalid scenario: {error}", file=sys.stderr)
        return 2
    crds = [Path(p) for p in args.crd]
    for crd in crds:
        if not crd.is_file():
            print(f"--crd {crd}: no such file", file=sys.stderr)
            return 2
    scale = args.time_scale if args.time_scale is not None else None if args.scenario else 60.0
    if scale is not None and scale <= 0:
        print("--time-scale must be positive", file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, _stopper(stop))
    try:
        result = _demo(scenario, scale=scale, duration=args.duration, stop=stop, crds=crds)
    except AddonStatusError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, previous)
    for failure in result.failures:
        print(f"{path}: {failure}", file=sys.stderr)
    return 0 if result.ok else 1


def _stopper(stop: threading.Event) -> Callable[[int, FrameType | None], None]:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    return handle


@dataclass(frozen=True)
class Demo:
    """The running demo: both API servers, the controller, and the system the player drives."""

    spoke: APIServer
    hub: APIServer
    controller: Replica
    system: System


@contextmanager
def running(
    scenario: Scenario, clock: SteppedClock, *, crds: Sequence[Path] = ()
) -> Iterator[Demo]:
    """The servers and the controller for `scenario`'s configuration, on `clock`."""
    from controller.app import demo_controller

    with ExitStack() as stack:
        spoke, hub = stack.enter_context(api_servers(crds))
        if start_generation(scenario) != 1:
            _change_generation(spoke, start_generation(scenario))
        temporary = tempfile.TemporaryDirectory(prefix="addon-status-demo-")
        workdir = Path(stack.enter_context(temporary))
        controller = stack.enter_context(
            demo_controller(
                spoke_url=spoke.url,
                hub_kubeconfig=hub_kubeconfig(hub, workdir),
                cluster_name=CLUSTER,
                config=scenario.config,
                clock=clock,
            )
        )
        client = stack.enter_context(ReportClient(controller.report_url, deadline=10.0))
        system = System(
            worker=controller.worker,
            report=client.report,
            spoke_status=lambda: _spoke_status(spoke),
            hub_status=lambda: _status(hub, CLUSTER),
            hub_copy=controller.options.hub_copy,
            change_generation=lambda generation: _change_generation(spoke, generation),
            change_object=lambda change: _change_object(spoke, change),
            checked=lambda status: _with_bookkeeping(spoke, status),
        )
        yield Demo(spoke, hub, controller, system)


def _demo(
    scenario: Scenario,
    *,
    scale: float | None,
    duration: float | None,
    stop: threading.Event,
    crds: Sequence[Path] = (),
) -> Result:
    clock = SteppedClock(EPOCH)
    if duration is not None:
        timer = threading.Timer(duration, stop.set)
        timer.daemon = True
        timer.start()
    with running(scenario, clock, crds=crds) as demo:
        urls = (demo.controller.report_url, demo.controller.metrics_url)
        _banner(scenario, demo.spoke, demo.hub, urls=urls, scale=scale)
        view = View(clock, EPOCH, sys.stdout)
        player = Player(scenario, demo.system, clock=clock, view=view, scale=scale, stop=stop)
        result = player.run()
        if duration is not None:
            stop.wait()
        spoke_writes = demo.spoke.count_requests(resource=PLURAL, subresource="status")
        hub_writes = demo.hub.count_requests(resource=PLURAL, subresource="status")
    held = "every expectation held" if result.ok else f"{len(result.failures)} FAILED"
    unplayed = result.steps - result.played
    stopped = f"; stopped before the last {unplayed} step(s)" if unplayed else ""
    print(
        f"\n{result.reports} reports ({result.refused} refused); {spoke_writes} spoke status "
        f"writes, {hub_writes} hub status writes.\n"
        f"{result.checked} checked steps: {held}{stopped}.\n"
        f"spoke: {view.latest.get('spoke', '')}\nhub:   {view.latest.get('hub', '')}"
    )
    return result


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


def _change_object(server: APIServer, change: ObjectChange) -> str | None:
    """A watched object written straight to the spoke's storage as the scenario gives it (or
    deleted), as its own controller would have left it; the resourceVersion the watch will
    deliver, None when nothing changed (deleting an object that does not exist)."""
    group, _, version = change.api_version.rpartition("/")
    plural = guess_plural(change.kind)
    try:
        if change.value is None:
            if not server.delete_object(group, version, plural, change.namespace, change.name):
                return None
            return server.resource_version
        stored = server.put_object(group, version, plural, change.value)
    except KeyError as error:
        raise AddonStatusError(
            f"{change.api_version} {change.kind} is not served by the embedded spoke;"
            " give its CRD with --crd"
        ) from error
    return str(stored["metadata"]["resourceVersion"])


def _banner(
    scenario: Scenario,
    spoke: APIServer,
    hub: APIServer,
    *,
    urls: tuple[str, str],
    scale: float | None,
) -> None:
    report_url, metrics_url = urls
    last = max(s.at for s in scenario.steps)
    if scale is None:
        pace = "none: each step as soon as the last one settled, on the scenario's clock"
    else:
        pace = (
            f"{scale:g}x: the story's {format_duration(last)} take "
            f"{last.total_seconds() / scale:.0f} s; Ctrl-C ends it"
        )
    print(
        f"addon-status demo: {scenario.name}\n"
        f"  spoke API server  {spoke.url}   (CR {SPOKE_NAMESPACE}/{ADDON})\n"
        f"  hub API server    {hub.url}   (CR {CLUSTER}/{ADDON})\n"
        f"  report API        {report_url}/v1/reports   (curl {report_url}/openapi.json)\n"
        f"  metrics           {metrics_url}/metrics\n"
        f"  time scale        {pace}\n",
        flush=True,
    )
