"""Throughput of the core entry point: reports per second and microseconds per report.

A realistic mix for a fleet's spoke: mostly heartbeats of healthy collectors, some forwarding
flaps absorbed by the dampening window, operator updates, refusals during an update failure.
Prints the median of several runs; one core (the core is single-threaded by design).

    .venv/bin/python tests/bench/core.py [--reports 20000] [--runs 7]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta

from statemachines import Config, Report, apply, start
from statemachines.vocabulary import Reason

MC, UWL = "metrics-collector", "uwl-metrics-collector"
R = Reason


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


def one_run(reports: list[tuple[float, Report]], config: Config) -> float:
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    state = start(config, t0)
    begin = time.perf_counter()
    for seconds, report in reports:
        state = apply(state, report, t0 + timedelta(seconds=seconds), config=config).state
    return time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    config = Config.create()
    reports = workload(args.reports)
    one_run(reports[:1000], config)  # warm up
    seconds = [one_run(reports, config) for _ in range(args.runs)]
    median = statistics.median(seconds)
    print(f"core entry point: {args.reports} reports x {args.runs} runs (median)")
    print(f"  reports per second: {args.reports / median:,.0f}")
    print(f"  microseconds per report: {median / args.reports * 1e6:.1f}")
    print(f"  fastest/slowest run: {min(seconds):.3f}s / {max(seconds):.3f}s")


if __name__ == "__main__":
    main()
