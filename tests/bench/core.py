"""Throughput of the core entry point: reports per second and microseconds per report, in all
and by verdict (heartbeats, most of a fleet's reports, should cost the least).

A realistic mix for a fleet's spoke: mostly heartbeats of healthy collectors, some forwarding
flaps absorbed by the dampening window, operator updates, refusals during an update failure.
Prints the median of several runs; one core (the core is single-threaded by design).

`--baseline REV` measures REV's core beside this tree's in one run: REV is checked out into a
temporary worktree (`git worktree add --detach`), and each run is a fresh process per tree,
alternating, on the same workload (this file's, importing each tree's `statemachines`), so that
the machine's load falls on both alike. `--profile` prints where this tree's time goes.

    .venv/bin/python tests/bench/core.py [--reports 20000] [--runs 7] [--baseline REV] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import random
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

import statemachines
from statemachines import Config, Report, apply, start

sys.path.insert(0, str(Path(__file__).resolve().parent))
from baseline import ROOT, worktree

sys.path.insert(0, str(ROOT))  # run as a script (README), `tests` is the repository's
from tests.names import MC, UWL, R


def workload(count: int, seed: int = 7) -> list[tuple[float, Report]]:
    """(seconds since start, report) for `count` reports, spread like a busy spoke's."""
    rng = random.Random(seed)
    mix = [
        (60, lambda c: Report(R.FORWARD_SUCCESSFUL, c, "metrics sent")),
        (15, lambda c: Report(R.FORWARD_FAILURE, c, "remote write 503")),
        (10, lambda c: Report(R.UPDATE_SUCCESSFUL, c, "rollout done")),
        (5, lambda c: Report(R.UPDATE_FAILURE, c, "rollout failed")),
        (5, lambda _: Report(R.UPDATE_SUCCESSFUL, None, "deployed")),
        (3, lambda c: Report(R.DISABLED_METRICS, c, "off")),
        (2, lambda c: Report(R.FORWARD_SUCCESSFUL, c, f"metrics sent, batch {rng.randrange(9)}")),
    ]
    weights = [w for w, _ in mix]
    makers = [m for _, m in mix]
    out = []
    for i in range(count):
        make = rng.choices(makers, weights)[0]
        out.append((i * 2.0, make(rng.choice((MC, UWL)))))
    return out


T0 = datetime(2025, 1, 1, tzinfo=UTC)


def one_run(reports: list[tuple[float, Report]], config: Config) -> float:
    state = start(config, T0)
    begin = time.perf_counter()
    for seconds, report in reports:
        state = apply(state, report, T0 + timedelta(seconds=seconds), config=config).state
    return time.perf_counter() - begin


def by_verdict(reports: list[tuple[float, Report]], config: Config) -> dict[str, list[float]]:
    """Each report's own time, by the verdict it got (a clock read around each call)."""
    state, spent = start(config, T0), defaultdict(list)
    clock = time.perf_counter
    for seconds, report in reports:
        now = T0 + timedelta(seconds=seconds)
        begin = clock()
        outcome = apply(state, report, now, config=config)
        spent[str(outcome.verdict.kind)].append(clock() - begin)  # type: ignore[union-attr]
        state = outcome.state
    return spent


def measure(reports: int, runs: int) -> dict[str, object]:
    """This process's figures: seconds per run, and microseconds per report by verdict."""
    config = Config.create()
    work = workload(reports)
    one_run(work[:1000], config)  # warm up
    seconds = [one_run(work, config) for _ in range(runs)]
    verdicts = by_verdict(work, config)
    return {
        "seconds": seconds,
        "verdicts": {k: (len(v), statistics.median(v) * 1e6) for k, v in verdicts.items()},
    }


def show(label: str, reports: int, figures: dict[str, object]) -> float:
    seconds: list[float] = figures["seconds"]  # type: ignore[assignment]
    median = statistics.median(seconds)
    print(f"{label}: {reports} reports x {len(seconds)} runs (median)")
    print(f"  reports per second: {reports / median:,.0f}")
    print(f"  microseconds per report: {median / reports * 1e6:.1f}")
    print(f"  fastest/slowest run: {min(seconds):.3f}s / {max(seconds):.3f}s")
    verdicts: dict[str, list[float]] = figures["verdicts"]  # type: ignore[assignment]
    for kind, (count, micros) in sorted(verdicts.items(), key=lambda kv: -kv[1][0]):
        print(f"  {kind + ' (' + str(count) + ')':<22} median us per report: {micros:6.1f}")
    return median / reports * 1e6


def child(tree: Path, reports: int) -> dict[str, object]:
    """One run in a fresh process whose `statemachines` is `tree`'s."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", "--reports", str(reports)],
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    )
    found: dict[str, object] = json.loads(done.stdout)
    assert Path(str(found["tree"])).resolve() == tree.resolve(), found["tree"]
    return found


def side_by_side(revision: str, reports: int, runs: int) -> None:
    with worktree(revision) as baseline:
        runs_of: dict[str, list[dict[str, object]]] = {"baseline": [], "this tree": []}
        for _ in range(runs):  # alternating, so that load falls on both
            runs_of["baseline"].append(child(baseline, reports))
            runs_of["this tree"].append(child(ROOT, reports))
    micros = {}
    for label, found in runs_of.items():
        merged = {
            "seconds": [f["seconds"][0] for f in found],  # type: ignore[index]
            "verdicts": {
                kind: (found[0]["verdicts"][kind][0],  # type: ignore[index]
                       statistics.median(f["verdicts"][kind][1] for f in found))  # type: ignore[index]
                for kind in found[0]["verdicts"]  # type: ignore[attr-defined]
            },
        }  # fmt: skip
        name = f"{label} ({revision})" if label == "baseline" else label
        micros[label] = show(f"core entry point, {name}", reports, merged)
    ratio = micros["baseline"] / micros["this tree"]
    print(f"this tree is {ratio:.2f}x the baseline's speed (goal: at least 1x, aim 2x)")


def profile(reports: int) -> None:
    config = Config.create()
    work = workload(reports)
    one_run(work[:1000], config)
    profiler = cProfile.Profile()
    profiler.runcall(one_run, work, config)
    print(f"where the time goes ({reports} reports, cProfile, by own time):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(20)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", metavar="REV", help="measure REV's core beside this one")
    parser.add_argument("--profile", action="store_true", help="print where the time goes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        found = measure(args.reports, 1)
        print(json.dumps({**found, "tree": str(Path(statemachines.__file__).parents[1])}))
    elif args.profile:
        profile(args.reports)
    elif args.baseline:
        side_by_side(args.baseline, args.reports, args.runs)
    else:
        show("core entry point", args.reports, measure(args.reports, args.runs))


if __name__ == "__main__":
    main()
