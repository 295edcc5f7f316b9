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
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from types import FrameType
from typing import Any

from controller.demo.fleet import Demo, Fleet, FleetClock, running_fleet
from controller.demo.scenario_file import Scenario, read
from controller.demo.scenario_run import Player, Result, SteppedClock
from controller.demo.servers import ADDON, SPOKE_NAMESPACE
from controller.demo.view import View
from controller.flags import Flag, add_flags
from controller.spoke.addon import PLURAL
from statemachines.errors import AddonStatusError, ScenarioError
from statemachines.settings import format_duration

__all__ = ["Demo", "add_demo_parser", "check_spoke", "run_demo", "running", "running_fleet"]

DEFAULT_SCENARIO = Path(__file__).with_name("story.yaml")
# With --clusters 2 or more, the second spoke has an outage of its own (the rest play the story).
SECOND_SCENARIO = Path(__file__).with_name("story_platform_outage.yaml")
STAGGER = timedelta(seconds=10)  # scenario time between the starts of two spokes


DEMO_FLAGS = (
    Flag("scenario", "--scenario", "scenario YAML to play and check", "FILE",
         shown="the built-in story"),
    Flag("time_scale", "--time-scale", "simulated seconds per real second", "N", type=float,
         shown="60 for the built-in story; with --scenario, no waiting: each step as soon as "
         "the last one settled"),
    Flag("clusters", "--clusters", "spokes replicating into one hub, each with its own "
         f"controller, started {STAGGER.total_seconds():g} s of scenario time apart; the second "
         "has an outage of its own (with the built-in story)", "N", type=int, default=1),
    Flag("duration", "--duration", "stop after this many real seconds", "SECONDS", type=float,
         shown="when the story is over"),
    Flag("crd", "--crd", "a CRD file the embedded spokes serve too, for the kinds of watched "
         "objects (repeatable; e.g. tests/data/crds/certificates.cert-manager.io.yaml)", "FILE",
         kind="list"),
)  # fmt: skip


def add_demo_parser(sub: Any) -> None:
    demo = sub.add_parser(
        "demo", help="run spoke + hub API servers, the controller and simulated reporters",
        description="Plays a scenario end to end and checks every `expect` on the CRs: exit 0 "
        "when all hold, 1 when one fails, 2 when the file is invalid (like `simulate`).",
        epilog="examples:\n  addon-status demo\n  addon-status demo --clusters 3 --duration 120\n"
        "  addon-status demo --scenario tests/scenarios/dead-collector-goes-stale.yaml",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    add_flags(demo, DEMO_FLAGS, variables=False)
    demo.set_defaults(handler=run_demo)


PREFIX = "addon-status demo: "  # as every command prefixes what it refuses


def run_demo(args: argparse.Namespace) -> int:
    crds = [Path(p) for p in args.crd]
    problem = _bad_flag(args.clusters, crds)
    if problem:
        print(f"{PREFIX}{problem}", file=sys.stderr)
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
        print(f"{PREFIX}--time-scale must be positive", file=sys.stderr)
        return 2
    stop = threading.Event()
    previous = signal.signal(signal.SIGINT, _stopper(stop))
    try:
        played = [scenarios[p] for p in paths]
        result = _demo(played, scale=scale, duration=args.duration, stop=stop, crds=crds)
    except AddonStatusError as error:
        print(f"{PREFIX}{error}", file=sys.stderr)
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


@contextmanager
def running(
    scenario: Scenario, clock: SteppedClock, *, crds: Sequence[Path] = ()
) -> Iterator[Demo]:
    """The servers and the controller for `scenario`'s configuration, on `clock`."""
    with running_fleet([(scenario, clock)], crds=crds) as fleet:
        yield fleet.spokes[0]


def _demo(
    scenarios: Sequence[Scenario],
    *,
    scale: float | None,
    duration: float | None,
    stop: threading.Event,
    crds: Sequence[Path] = (),
) -> Result:
    from controller.demo.epilogue import play_epilogue
    from controller.demo.fleet_line import FleetLine  # the client: only once the demo starts

    # The story in the present: its time zero is now (a fleet view beside it reads the same
    # times, on the hub's clock), each later spoke STAGGER after the one before.
    zero = datetime.now(UTC).replace(microsecond=0)
    starts = [zero + i * STAGGER for i in range(len(scenarios))]
    clocks = [SteppedClock(start) for start in starts]
    if duration is not None:
        timer = threading.Timer(duration, stop.set)
        timer.daemon = True
        timer.start()
    fleet_wide = len(scenarios) > 1
    players: list[Player] = []
    # The fleet's story time, on which its lines are stamped so that they never go back: the
    # furthest clock of the spokes whose play began (a later one starts ahead), and the
    # epilogue's after them.
    now = FleetClock(zero)
    if fleet_wide:
        now.counts = lambda clock: any(p.started for p in players if p.clock is clock)
    members = list(zip(scenarios, clocks, strict=True))
    with running_fleet(members, crds=crds, clock=now) as fleet:
        _banner(scenarios, fleet, scale=scale, zero=zero)
        views = {
            demo.cluster: View(now if fleet_wide else clock, zero, sys.stdout,
                               label=demo.cluster if fleet_wide else "")
            for demo, clock in zip(fleet.spokes, clocks, strict=True)
        }  # fmt: skip
        for scenario, demo, clock, start in zip(scenarios, fleet.spokes, clocks, starts,
                                                strict=True):  # fmt: skip
            player = Player(scenario, demo.system, clock=clock, view=views[demo.cluster],
                            scale=scale, stop=stop, start=start, origin=zero)  # fmt: skip
            demo.on_restart.append(partial(setattr, player, "system"))
            players.append(player)
        with ExitStack() as line:
            if fleet_wide:  # the fleet's summary as `fleet` shows it, through to the end
                summary = View(now, zero, sys.stdout)
                lines = line.enter_context(
                    FleetLine(fleet.kubeconfig, now=now, view=summary, views=views)
                )
            with ThreadPoolExecutor(len(players), "demo-player") as pool:
                results = list(pool.map(Player.run, players))
            if fleet_wide and not stop.is_set() and all(r.played == r.steps for r in results):
                results[0].failures += play_epilogue(fleet, lines, views, scale=scale, stop=stop)
            if duration is not None:
                with ThreadPoolExecutor(len(players), "demo-follower") as pool:
                    list(pool.map(partial(Player.follow, since=now()), players))
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
    by_hand = _merged([p.by_hand for p in players], [""] * len(players))
    again = _merged([p.again for p in players], [""] * len(players))
    result.reports += by_hand.reports + again.reports
    result.refused += by_hand.refused + again.refused
    held = "every expectation held" if result.ok else f"{len(result.failures)} FAILED"
    unplayed = result.steps - result.played
    stopped = f"; stopped before the last {unplayed} step(s)" if unplayed else ""
    hand = f", {by_hand.reports} sent by hand" if by_hand.reports else ""
    hand += f", {again.reports} after the play by its collectors" if again.reports else ""
    print(
        f"\n{result.reports} reports ({result.refused} refused{hand}); {spoke_writes} spoke status "
        f"writes, {hub_writes} hub status writes.\n"
        f"{result.checked} checked steps: {held}{stopped}."
    )
    for demo, (spoke, hub) in zip(fleet.spokes, closing, strict=True):
        who = f"{demo.cluster} " if fleet_wide else ""
        print(f"{who}spoke: {spoke}\n{who}hub:   {hub}")
    return result


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


def _banner(
    scenarios: Sequence[Scenario], fleet: Fleet, *, scale: float | None, zero: datetime
) -> None:
    last = max(s.at for s in scenarios[0].steps)
    if scale is None:
        pace = "none: each step as soon as the last one settled, on the scenario's clock"
    else:
        pace = (
            f"{scale:g}x: the story's {format_duration(last)} take "
            f"{last.total_seconds() / scale:.0f} s; Ctrl-C ends it"
        )
    plays = ", ".join(
        f"{s.name or 'a scenario'}" + (f" on {d.cluster}" if len(fleet.spokes) > 1 else "")
        for s, d in zip(scenarios, fleet.spokes, strict=True)
    )
    spokes = f"{len(fleet.spokes)} spoke{'s' if len(fleet.spokes) > 1 else ''}"
    lines = [f"addon-status demo: {spokes} and a hub, the controller and the hub side; "
             f"playing {plays}"]  # fmt: skip
    for demo in fleet.spokes:
        who = f"{demo.cluster}: " if len(fleet.spokes) > 1 else ""
        report_url, metrics_url = demo.controller.report_url, demo.controller.metrics_url
        lines += [
            f"  {who}spoke API server  {demo.spoke.url}   (CR {SPOKE_NAMESPACE}/{ADDON})",
            f"  {who}report API        {report_url}/v1/reports   (curl {report_url}/openapi.json)",
            f"  {who}metrics           {metrics_url}/metrics",
            f"  {who}check spoke       {check_spoke(demo)}",
        ]
    copies = ", ".join(f"{d.cluster}/{ADDON}" for d in fleet.spokes)
    lines += [
        f"  hub API server    {fleet.hub.url}   (CR {copies})",
        f"  hub kubeconfig    {fleet.kubeconfig}",
        f"                    (addon-status fleet --kubeconfig {fleet.kubeconfig} --watch)",
        f"  hub side metrics  {fleet.hub_side_metrics}",
        f"  time scale        {pace}",
        f"  story time        from now, {zero:%Y-%m-%d %H:%M:%S} UTC (what the servers stamp)",
        "",
    ]
    print("\n".join(lines), flush=True)


def check_spoke(demo: Demo) -> str:
    """`check spoke` with the flags the spoke's agent runs with (the demo's, not its pod's)."""
    port = demo.controller.report_url.rsplit(":", 1)[1]
    return (
        f"addon-status check spoke --kubeconfig {demo.kubeconfig} --hub-kubeconfig "
        f"{demo.hub_kubeconfig} --cluster-name {demo.cluster} --hub-create-missing --insecure "
        f"--report-address 127.0.0.1:{port}"
    )
