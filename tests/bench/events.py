"""Kubernetes Events per report: what the Event recorder sends to a real API client for a busy
spoke, with client-go's correlation (repeats patched onto one Event) against one new Event per
move (the recorder before it correlated).

The reports are `e2e.py`'s seeded workload (mostly heartbeats, forwarding flaps, operator
updates, refusals), judged by the real core on a fake clock moved `--step` seconds per report;
the Events the core's changes deserve (`records_for`) go through the real `EventRecorder` and
`AddonStore` (on `RestKube`, the project's own connection over HTTP) to an embedded API server,
whose audit log counts the creates and patches.

    .venv/bin/python tests/bench/events.py [--reports 1000] [--step 10]
"""

from __future__ import annotations

import argparse
import sys
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.kube.connection import Connection  # noqa: E402
from controller.kube.rest import RestKube  # noqa: E402
from controller.spoke.addon import AddonRef, AddonStore  # noqa: E402
from controller.spoke.events import EventRecorder, records_for  # noqa: E402
from kubesim import APIServer  # noqa: E402
from statemachines import Config, apply, start  # noqa: E402
from tests.bench.e2e import workload  # noqa: E402
from tests.clock import T0  # noqa: E402
from tests.spoke.fakes import NAME, NAMESPACE  # noqa: E402

CRD = ROOT / "manifests" / "base" / "crd.yaml"


def measure(count: int, step: float) -> tuple[int, int, int]:
    """(Events the core's changes deserve, Events created, Events patched)."""
    config = Config.create()
    with (
        APIServer([CRD], namespaces=["default", NAMESPACE]) as server,
        Connection(server.url) as api,
    ):
        store = AddonStore(RestKube(api), AddonRef(NAMESPACE, NAME))
        recorder = EventRecorder(store, capacity=count * 4)
        recorder.start()
        state, deserved = start(config, T0), 0
        for index, report in enumerate(workload(count)):
            now = T0 + timedelta(seconds=step * index)
            outcome = apply(state, report, now, config=config)
            records = records_for(outcome, state, now, uid="uid-1", profile=config.profile)
            deserved += len(records)
            recorder.record(records)
            state = outcome.state
        recorder.stop(timeout=60.0)
        created = server.count_requests(verbs=("create",), resource="events")
        patched = server.count_requests(verbs=("patch",), resource="events")
    return deserved, created, patched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--step", type=float, default=10.0, help="simulated seconds per report")
    args = parser.parse_args()
    deserved, created, patched = measure(args.reports, args.step)
    per = args.reports
    print(f"Events for {per} reports, one every {args.step:g} simulated seconds")
    print(f"  moves and addon changes (one Event each without correlation): {deserved}")
    print(f"  Events created per report, without correlation: {deserved / per:.3f}")
    print(f"  Events created per report, correlated:          {created / per:.3f}")
    print(f"  Event patches per report, correlated:           {patched / per:.3f}")
    print(f"  Events in the namespace at the end: {created} (was {deserved})")
    if created + patched != deserved:
        print(f"FAILED every Event sent once: {created} + {patched} != {deserved}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()
