"""Fleet simulation: N spokes replicate their addon status into ONE hub while their collectors
flap; hub writes per simulated minute with dampening (degradeAfter 10m) and without
(degradeAfter 0), for the same flapping signal, and their ratio, for each `--hub-copy` mode
(both by default: `status` copies the history and versions too, never the dampening windows).

Each collector alternates healthy periods (ForwardSuccessful) and outages (ForwardFailure) with
random lengths from a seeded RNG; most outages are shorter than the 10-minute window, some are
longer; every collector repeats its current reason every 2 simulated minutes (so none goes
stale). Before the measured period every spoke is brought to Available and its hub copy synced.

What is real and what is simulated is printed with the figures. By default: the core of every
spoke (`statemachines.apply` / `advance`, timers fired at the core's `next_wakeup`) and one real
`HubReplicator` per spoke (its own thread; `RestKube` over the project's own connection;
one shared hub kubeconfig and connection pool) writing over HTTP to one embedded API server
that holds every spoke's hub copy, on an accelerated clock (`--speed` simulated seconds per
real second). Simulated: the collectors (reports go straight into the core: no report API),
the spoke API servers (a changed status is published at once, as if the spoke write had
succeeded) and the clock. `--simulate-only` runs no server and no thread: the replicator's
own decisions (`controller.spoke.replication.in_sync`, `hub_status_for`) on an in-memory hub copy
per spoke count
the writes, one per hub-visible change (no coalescing: an upper bound), as fast as it can.

    .venv/bin/python tests/bench/fleet.py [--clusters 500] [--minutes 30] [--speed 60]
    .venv/bin/python tests/bench/fleet.py --simulate-only --clusters 5000
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402

from controller.kube.kubeconfig import KubeconfigSource, kubeconfig_yaml  # noqa: E402
from controller.ops.leader import SystemClock  # noqa: E402
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION  # noqa: E402
from controller.spoke.metrics import ReplicationMetrics  # noqa: E402
from controller.spoke.replication import CopyMode, HubReplicator  # noqa: E402
from kubesim import DEFAULT_NAMESPACES, APIServer  # noqa: E402
from statemachines import Config, Settings, to_status  # noqa: E402
from tests.bench.flapping import (  # noqa: E402
    SHAPE,
    CountingHub,
    Played,
    Signal,
    Spoke,
    fleet_signal,
    play,
)

NAME = "observability-addon"


# --- the hub: one embedded API server, one real replicator per spoke --------------------------


class Tally:
    """What every replicator's metrics saw, summed over the fleet."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.writes = 0
        self.errors: dict[str, int] = {}
        self.lags: list[float] = []


class FleetMetrics(ReplicationMetrics):
    """A replicator's own metrics (its own registry, as in a real spoke), also summed."""

    def __init__(self, tally: Tally) -> None:
        super().__init__(CollectorRegistry())
        self.tally = tally

    def wrote(self) -> None:
        super().wrote()
        with self.tally.lock:
            self.tally.writes += 1

    def failed(self, kind: str) -> None:
        super().failed(kind)
        with self.tally.lock:
            self.tally.errors[kind] = self.tally.errors.get(kind, 0) + 1

    def synced(self, *, lag: float | None) -> None:
        super().synced(lag=lag)
        if lag is not None:
            with self.tally.lock:
                self.tally.lags.append(lag)


def namespace(spoke: int) -> str:
    return f"cluster-{spoke:05d}"


@contextmanager
def hub_server(clusters: int) -> Iterator[tuple[APIServer, KubeconfigSource]]:
    """One hub API server with an addon CR copy per managed cluster, and its kubeconfig."""
    names = [namespace(i) for i in range(clusters)]
    crd = ROOT / "manifests" / "base" / "crd.yaml"
    with (
        APIServer([crd], namespaces=(*DEFAULT_NAMESPACES, *names)) as server,
        tempfile.TemporaryDirectory() as workdir,
    ):
        for name in names:
            meta = {"name": NAME, "namespace": name}
            body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "metadata": meta}
            server.put_object(GROUP, VERSION, PLURAL, {**body, "spec": {}})
        path = Path(workdir) / "hub-kubeconfig"
        path.write_text(kubeconfig_yaml(server=server.url, token="unused"))
        yield server, KubeconfigSource(path)


@contextmanager
def replicators(
    source: KubeconfigSource, clusters: int, *, copy: CopyMode, tally: Tally
) -> Iterator[list[HubReplicator]]:
    made = [
        HubReplicator(
            source,
            namespace=namespace(i),
            name=NAME,
            copy=copy,
            clock=SystemClock(),
            metrics=FleetMetrics(tally),
        )
        for i in range(clusters)
    ]
    for replicator in made:
        replicator.start()
    try:
        yield made
    finally:
        stuck = [r.namespace for r in made if not r.stop(timeout=20)]
        if stuck:
            print(f"  replicators still in a hub call at exit: {stuck[:5]}", file=sys.stderr)


def wait_synced(made: list[HubReplicator], timeout: float) -> float:
    """Seconds until every replicator holds its newest publication on the hub."""
    begin = time.perf_counter()
    deadline = begin + timeout
    for replicator in made:
        if not replicator.wait_synced(max(deadline - time.perf_counter(), 0.0)):
            raise SystemExit(
                f"{replicator.namespace}: the hub copy did not catch up in {timeout} s"
            )
    return time.perf_counter() - begin


# --- one setting, measured ---------------------------------------------------------------------


@dataclass
class Setting:
    """The figures of one degradeAfter setting over the same signal."""

    label: str
    changes: int = 0
    visible: int = 0  # hub-visible (conditions) changes: the writes without coalescing
    hub_writes: int | None = None  # measured on the hub server
    played: Played = field(default_factory=Played)
    drain: float = 0.0
    tally: Tally = field(default_factory=Tally)
    copies_current: bool = True


def config_for(degrade_after: str) -> Config:
    return Config.create(settings=Settings.model_validate({"degradeAfter": degrade_after}))


def run_setting(
    signal: Signal,
    degrade_after: str,
    label: str,
    *,
    clusters: int,
    seconds: float,
    speed: float | None,
    copy: CopyMode,
    hub: tuple[APIServer, KubeconfigSource] | None,
) -> Setting:
    config = config_for(degrade_after)
    setting = Setting(label)
    counters = [CountingHub(copy) for _ in range(clusters)]
    if hub is None:
        spokes = [Spoke(config, [counters[i]]) for i in range(clusters)]
        _settle(spokes, counters)
        setting.played = play(signal, spokes, seconds=seconds, speed=None)
    else:
        server, source = hub
        with replicators(source, clusters, copy=copy, tally=setting.tally) as made:
            spokes = [Spoke(config, [counters[i], made[i].publish]) for i in range(clusters)]
            _settle(spokes, counters)
            wait_synced(made, timeout=120)
            server.clear_audit()
            setting.tally.lags.clear()
            setting.played = play(signal, spokes, seconds=seconds, speed=speed)
            setting.drain = wait_synced(made, timeout=120)
            setting.hub_writes = server.count_requests(
                verbs=["update"], resource=PLURAL, subresource="status"
            )
            setting.copies_current = all(
                _hub_conditions(server, i) == to_status(s.state)["conditions"]
                for i, s in enumerate(spokes)
            )
    setting.changes = sum(s.changes for s in spokes)
    setting.visible = sum(c.writes for c in counters)
    return setting


def _settle(spokes: list[Spoke], counters: list[CountingHub]) -> None:
    for spoke in spokes:
        spoke.settle()
    for counter in counters:
        counter.writes = 0


def _hub_conditions(server: APIServer, spoke: int) -> Any:
    found = server.get_object(GROUP, VERSION, PLURAL, namespace(spoke), NAME) or {}
    return (found.get("status") or {}).get("conditions")


# --- output ------------------------------------------------------------------------------------

REAL = """\
real: the core of every spoke (statemachines.apply/advance); one HubReplicator per spoke
(its own thread; RestKube over its own connection; one shared hub kubeconfig and
connection pool) writing over HTTP to one embedded API server holding every hub copy
simulated: the collectors (reports go straight into the core), the spoke API servers (a
change is published at once), the clock (accelerated; replicator backoff and resync run
on real time)"""
SIMULATED = """\
real: the core of every spoke (statemachines.apply/advance) and the replicator's decisions
(controller.spoke.replication.in_sync/hub_status_for) on an in-memory hub copy per spoke
simulated: the collectors, the spoke API servers, the clock, and the hub: no server, no
thread; a write is counted for every hub-visible change (an upper bound: no coalescing)"""
SETTINGS = (("10m", "degradeAfter 10m"), ("0s", "degradeAfter 0"))


def show(args: argparse.Namespace, signal: Signal, damped: Setting, raw: Setting) -> None:
    minutes, real = args.minutes, not args.simulate_only
    pace = f"at {args.speed:g}x" if real else "as fast as possible"
    print(
        f"fleet: {args.clusters} spokes -> one hub, {minutes:g} simulated minutes per "
        f"setting {pace}, seed {args.seed}, --hub-copy {args.hub_copy}, {os.cpu_count()} cores"
    )
    print(
        f"  signal: {len(signal.events)} reports; {signal.outages} outages, "
        f"{signal.long_outages} of them longer than the 10m window"
    )
    print(f"  {SHAPE}")
    print(textwrap.indent(REAL if real else SIMULATED, "  "))
    print(f"  {'per simulated minute':<46}{damped.label:>18}{raw.label:>18}{'ratio':>8}")
    writes = ("hub writes (measured on the hub)", damped.hub_writes or 0, raw.hub_writes or 0)
    rows = [
        ("spoke status changes", damped.changes, raw.changes),
        (f"hub-visible changes ({args.hub_copy})", damped.visible, raw.visible),
        writes if real else ("hub writes (simulated)", damped.visible, raw.visible),
    ]
    for name, a, b in rows:
        ratio = f"{b / a:.2f}" if a else "-"
        print(f"  {name + ':':<46}{a / minutes:>18.2f}{b / minutes:>18.2f}{ratio:>8}")
    if not real:
        return
    for name, show_one in REAL_ROWS:
        print(f"  {name + ':':<46}{show_one(damped):>18}{show_one(raw):>18}")
    current = damped.copies_current and raw.copies_current
    print(f"  every hub copy equals its spoke's final conditions: {current}")
    if not current or any(s.hub_writes is None or s.hub_writes > s.visible for s in (damped, raw)):
        raise SystemExit(1)


def _lag(setting: Setting, q: int) -> str:
    lags = sorted(setting.tally.lags)
    return f"{lags[min(len(lags) - 1, len(lags) * q // 100)] * 1000:.0f} ms" if lags else "-"


def _errors(setting: Setting) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(setting.tally.errors.items())) or "0"


REAL_ROWS: tuple[tuple[str, Callable[[Setting], str]], ...] = (
    ("replication lag p50 (real time)", lambda s: _lag(s, 50)),
    ("replication lag p99 (real time)", lambda s: _lag(s, 99)),
    ("driver behind the clock, max (simulated)", lambda s: f"{s.played.max_behind:.1f} s"),
    ("hub drain after the period (real time)", lambda s: f"{s.drain:.2f} s"),
    ("real seconds for the period", lambda s: f"{s.played.real_seconds:.1f} s"),
    ("hub errors", _errors),
)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=500)
    parser.add_argument("--minutes", type=float, default=30.0, help="simulated, per setting")
    parser.add_argument("--speed", type=float, default=60.0, help="simulated s per real s")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--simulate-only", action="store_true", help="no hub server, no threads")
    parser.add_argument("--hub-copy", choices=("conditions", "status", "both"), default="both")
    args = parser.parse_args()
    # The replicators share one pool of hub connections (in a fleet each spoke has its own):
    # a burst opens extra connections that urllib3 discards afterwards with a warning.
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    seconds = args.minutes * 60
    signal = fleet_signal(args.clusters, seconds, args.seed)
    modes: list[CopyMode] = ["conditions", "status"] if args.hub_copy == "both" else [args.hub_copy]
    for mode in modes:
        common: dict[str, Any] = {
            "clusters": args.clusters,
            "seconds": seconds,
            "speed": args.speed,
            "copy": mode,
        }
        with contextlib.ExitStack() as stack:
            hub = None if args.simulate_only else stack.enter_context(hub_server(args.clusters))
            damped, raw = (run_setting(signal, *s, hub=hub, **common) for s in SETTINGS)
        show(argparse.Namespace(**{**vars(args), "hub_copy": mode}), signal, damped, raw)


if __name__ == "__main__":
    main()
