"""`addon-status demo`: the whole system on one machine, in under a minute.

An embedded spoke API server and an embedded hub API server (the same Kubernetes-semantics
server the integration tests use, loading the project's CRD), the real controller over HTTP
(the same assembly as `run`), and a simulated endpoint operator and collectors that play a
scenario over the report API on an accelerated clock. A live view prints every report with its
verdict and every change of the addon's conditions on the spoke and on the hub.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from controller.kube.addons import GROUP, PLURAL, VERSION
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.options import DEFAULT_NAME, DEFAULT_NAMESPACE
from controller.reports.client import ReportClient, ReportRejected, ReportUnavailable
from kubesim import APIServer, UserInfo
from statemachines.conditions import parse_time
from statemachines.errors import AddonStatusError, ScenarioError
from statemachines.scenario import Scenario, Step, load
from statemachines.settings import format_duration
from statemachines.vocabulary import ConditionType

__all__ = ["DemoClock", "add_demo_parser", "play"]

ADDON, SPOKE_NAMESPACE, CLUSTER = DEFAULT_NAME, DEFAULT_NAMESPACE, "cluster1"
HUB_TOKEN = "demo-hub-token"  # a demo credential for the embedded hub; never a real one
CRD = Path(__file__).with_name("crds") / "observabilityaddons.yaml"  # manifests/base/crd.yaml
DEFAULT_SCENARIO = Path(__file__).with_name("story.yaml")


class DemoClock:
    """Simulated time running `scale` times faster than the wall clock, from `start`."""

    def __init__(self, scale: float, start: datetime | None = None) -> None:
        self.scale = scale
        self.start = start or datetime.now(UTC).replace(microsecond=0)
        self._origin = time.monotonic()
        self.story = self.start  # when the story began: the servers take a moment to start

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=(time.monotonic() - self._origin) * self.scale)

    def begin_story(self) -> None:
        self.story = self()

    def offset(self) -> timedelta:
        """Simulated time since the story began."""
        return self() - self.story

    def sleep_until(self, offset: timedelta, stop: threading.Event) -> bool:
        """Wait until simulated `offset`; False when `stop` was set first."""
        real = (offset - self.offset()).total_seconds() / self.scale
        return not stop.wait(max(0.0, real))


@dataclass
class Printer:
    clock: DemoClock
    out: TextIO
    lock: threading.Lock

    def line(self, kind: str, text: str) -> None:
        stamp = _stamp(self.clock.offset())
        with self.lock:
            print(f"[{stamp}] {kind:<7} {text}", file=self.out, flush=True)


def _stamp(offset: timedelta) -> str:
    seconds = int(offset.total_seconds())
    return f"{seconds // 60:3d}m{seconds % 60:02d}s"


@contextmanager
def api_servers() -> Iterator[tuple[APIServer, APIServer]]:
    """A spoke and a hub API server, each with its addon CR."""
    if not CRD.exists():
        raise AddonStatusError(f"{CRD}: the CRD is missing; reinstall addon-status")
    spoke = APIServer([CRD], namespaces=["default", SPOKE_NAMESPACE])
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


def addon_summary(obj: dict[str, Any] | None) -> str:
    """`Degraded (ForwardFailure)`: the standard condition that is True, or what is missing."""
    conditions = ((obj or {}).get("status") or {}).get("conditions") or []
    standard = set(ConditionType)
    true = [c for c in conditions if c.get("type") in standard and c.get("status") == "True"]
    if not true:
        return "no status yet"
    return f"{true[0]['type']} ({true[0]['reason']})"


def collectors_summary(obj: dict[str, Any] | None) -> str:
    collectors = ((obj or {}).get("status") or {}).get("collectors") or []
    parts = []
    for c in collectors:
        reason = "ReportsStale" if c.get("stale") else c.get("reason", "no reason")
        pending = f", {c['pendingReason']} pending" if c.get("pendingReason") else ""
        parts.append(f"{c['name']} {c['state']} ({reason}{pending})")
    return "; ".join(parts)


class LiveView:
    """Polls the spoke and the hub CRs and prints each change as it becomes visible."""

    def __init__(self, spoke: APIServer, hub: APIServer, printer: Printer) -> None:
        self._reads = [
            ("spoke", spoke, SPOKE_NAMESPACE),
            ("hub", hub, CLUSTER),
        ]
        self._printer = printer
        self._seen: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="demo-view", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.poll()

    def latest(self, where: str) -> str:
        return self._seen.get(where, "")

    def poll(self) -> None:
        for where, server, namespace in self._reads:
            obj = server.get_object(GROUP, VERSION, PLURAL, namespace, ADDON)
            text = addon_summary(obj)
            detail = collectors_summary(obj) if where == "spoke" else ""
            view = f"{text:<32} {detail}".rstrip()
            if self._seen.get(where) != view:
                self._seen[where] = view
                self._printer.line(where, view)

    def _loop(self) -> None:
        while not self._stop.wait(0.02):
            self.poll()


def play(
    scenario: Scenario,
    report: Callable[[Step], dict[str, Any]],
    *,
    clock: DemoClock,
    printer: Printer,
    stop: threading.Event,
) -> tuple[int, int]:
    """Send each step's report at its simulated time; returns (reports sent, refused)."""
    sent = refused = 0
    clock.begin_story()
    for step in scenario.steps:
        if step.report is None:
            continue
        if not clock.sleep_until(step.at, stop):
            break
        who = step.report.collector or "operator -> all"
        text = f"{who}: {step.report.reason.value}"
        if step.report.message:
            text += f" {step.report.message!r}"
        try:
            verdict = report(step)
        except (ReportRejected, ReportUnavailable) as error:
            printer.line("report", f"{text} => not delivered: {error}")
            continue
        sent += 1
        answer = verdict["verdict"]
        if answer == "refused":
            refused += 1
            answer = f"REFUSED by {verdict.get('rule')}: {verdict.get('detail')}"
        elif answer == "pending" and verdict.get("deadline"):
            deadline = parse_time(verdict["deadline"]) - clock.story
            answer = f"pending: the dampening window ends at {_stamp(deadline).strip()}"
        note = f"   # {step.note}" if step.note else ""
        printer.line("report", f"{text} => {answer}{note}")
    return sent, refused


def add_demo_parser(sub: Any) -> None:
    demo = sub.add_parser(
        "demo", help="run spoke + hub API servers, the controller and simulated reporters"
    )
    demo.add_argument("--scenario", help="scenario YAML to play (default: the built-in story)")
    demo.add_argument(
        "--time-scale",
        type=float,
        default=60.0,
        help="simulated seconds per real second (default 60: a minute per second)",
    )
    demo.add_argument(
        "--duration",
        type=float,
        default=None,
        help="stop after this many real seconds (default: when the story is over)",
    )
    demo.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    path = Path(args.scenario) if args.scenario else DEFAULT_SCENARIO
    try:
        scenario = load(path.read_text(encoding="utf-8"), source=path.name)
    except OSError as error:
        print(f"{path}: cannot read: {error.strerror}", file=sys.stderr)
        return 2
    except ScenarioError as error:
        print(f"{path}: invalid scenario: {error}", file=sys.stderr)
        return 2
    if args.time_scale <= 0:
        print("--time-scale must be positive", file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, _stopper(stop))
    try:
        return _demo(scenario, scale=args.time_scale, duration=args.duration, stop=stop)
    except AddonStatusError as error:
        print(f"demo: {error}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, previous)


def _stopper(stop: threading.Event) -> Callable[[int, FrameType | None], None]:
    def handle(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    return handle


def _demo(
    scenario: Scenario, *, scale: float, duration: float | None, stop: threading.Event
) -> int:
    from controller.app import demo_controller

    clock = DemoClock(scale)
    printer = Printer(clock, sys.stdout, threading.Lock())
    if duration is not None:
        threading.Timer(duration, stop.set).start()
    with ExitStack() as stack:
        spoke, hub = stack.enter_context(api_servers())
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
        _banner(
            scenario, spoke, hub, urls=(controller.report_url, controller.metrics_url), scale=scale
        )
        view = LiveView(spoke, hub, printer)
        view.start()
        stack.callback(view.stop)
        client = stack.enter_context(ReportClient(controller.report_url, deadline=10.0))

        def report(step: Step) -> dict[str, Any]:
            assert step.report is not None
            return client.report(
                step.report.collector,
                reason=step.report.reason.value,
                message=step.report.message,
                observed_generation=step.report.observed_generation,
            )

        sent, refused = play(scenario, report, clock=clock, printer=printer, stop=stop)
        _settle(view, stop, seconds=3.0)
        if duration is not None:
            stop.wait()
        view.poll()
        spoke_writes = spoke.count_requests(resource=PLURAL, subresource="status")
        hub_writes = hub.count_requests(resource=PLURAL, subresource="status")
        print(
            f"\n{sent} reports ({refused} refused); {spoke_writes} spoke status writes, "
            f"{hub_writes} hub status writes.\n"
            f"spoke: {view.latest('spoke')}\nhub:   {view.latest('hub')}"
        )
    return 0


def _settle(view: LiveView, stop: threading.Event, *, seconds: float) -> None:
    """Give the hub copy a moment to catch up with the spoke before the summary."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not stop.is_set():
        view.poll()
        if view.latest("hub").split("  ")[0] == view.latest("spoke").split("  ")[0]:
            return
        stop.wait(0.1)


def _banner(
    scenario: Scenario, spoke: APIServer, hub: APIServer, *, urls: tuple[str, str], scale: float
) -> None:
    report_url, metrics_url = urls
    last = max((s.at for s in scenario.steps), default=timedelta(0))
    print(
        f"addon-status demo: {scenario.name}\n"
        f"  spoke API server  {spoke.url}   (CR {SPOKE_NAMESPACE}/{ADDON})\n"
        f"  hub API server    {hub.url}   (CR {CLUSTER}/{ADDON})\n"
        f"  report API        {report_url}/v1/reports   (curl {report_url}/openapi.json)\n"
        f"  metrics           {metrics_url}/metrics\n"
        f"  time scale        {scale:g}x: the story's {format_duration(last)} take "
        f"{last.total_seconds() / scale:.0f} s; Ctrl-C ends it\n",
        flush=True,
    )
