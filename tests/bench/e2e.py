"""End to end on the spoke: reports submitted to the reconcile worker, through the core, to the
status written on the embedded API server by the real `kubernetes` client over HTTP.

Prints reports judged (and accepted) per second, the p50/p99 latency from `submit` to the
status write that made the report visible, and status writes per visible state change (goal:
exactly 1; and 0 for heartbeats and refusals). A shadow copy of the core, fed the same reports
at the same times, says which reports change the status; the written statuses must be exactly
the shadow's, in order. The fake clock moves 10 ms per report, so dampening windows open (and
are written once) but never run out during a run: every write belongs to one report.

    .venv/bin/python tests/bench/e2e.py [--reports 3000]

(The report-API engineer may extend this to go over HTTP.)
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kubernetes import client  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from controller.apiserver import APIServer  # noqa: E402
from controller.kube import GROUP, PLURAL, VERSION  # noqa: E402
from controller.options import Address, RunOptions  # noqa: E402
from controller.run import SpokeController  # noqa: E402
from controller.worker import Worker  # noqa: E402
from statemachines import Report, VerdictKind, apply, start, to_status  # noqa: E402
from statemachines.vocabulary import Reason  # noqa: E402
from tests.controller.fakes import NAME, NAMESPACE, FakeClock  # noqa: E402

MC, UWL = "metrics-collector", "uwl-metrics-collector"
R = Reason
CRD = ROOT / "manifests" / "base" / "crd.yaml"
STEP = timedelta(milliseconds=10)


def workload(count: int, seed: int = 11) -> list[Report]:
    """A busy spoke: mostly heartbeats, forwarding flaps, operator updates and refusals."""
    rng = random.Random(seed)
    mix: list[tuple[int, Callable[[str], Report]]] = [
        (55, lambda c: Report(R.FORWARD_SUCCESSFUL, c, "metrics sent")),
        (15, lambda c: Report(R.FORWARD_FAILURE, c, f"remote write 503 ({rng.randrange(3)})")),
        (12, lambda c: Report(R.UPDATE_SUCCESSFUL, c, "rollout done")),
        (8, lambda c: Report(R.UPDATE_FAILURE, c, "rollout failed")),
        (5, lambda _: Report(R.UPDATE_SUCCESSFUL, None, "deployed")),
        (5, lambda c: Report(R.FORWARD_SUCCESSFUL, c, f"metrics sent, batch {rng.randrange(5)}")),
    ]
    weights = [w for w, _ in mix]
    makers = [m for _, m in mix]
    return [rng.choices(makers, weights)[0](rng.choice((MC, UWL))) for _ in range(count)]


class Writes:
    """The worker's `on_status_written` hook: when each write happened, and what it wrote."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.statuses: list[dict[str, Any]] = []
        self.arrived = threading.Condition()

    def __call__(self, status: dict[str, Any]) -> None:
        with self.arrived:
            self.times.append(time.perf_counter())
            self.statuses.append(status)
            self.arrived.notify_all()

    def wait_for(self, count: int, timeout: float = 30.0) -> None:
        with self.arrived:
            if not self.arrived.wait_for(lambda: len(self.times) >= count, timeout):
                raise SystemExit(f"only {len(self.times)} of {count} status writes arrived")


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


@dataclass
class Result:
    submitted: list[float] = field(default_factory=list)  # perf_counter at each submit
    changed: list[int] = field(default_factory=list)  # reports that change the status
    expected: list[dict[str, Any]] = field(default_factory=list)  # the core's statuses
    kinds: dict[VerdictKind, int] = field(default_factory=dict)
    elapsed: float = 0.0
    puts: int = 0


@contextmanager
def spoke_on_a_server(clock: FakeClock) -> Iterator[tuple[APIServer, SpokeController]]:
    """An API server with the addon CR, and a started controller on it."""
    options = RunOptions(
        metrics_address=Address(host="127.0.0.1", port=0),
        probe_address=Address(host="127.0.0.1", port=0),
        stale_after=timedelta(hours=6),
    )
    with APIServer([CRD], watch_history=10000) as server:
        api = client.ApiClient(client.Configuration(host=server.url))
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": "ObservabilityAddon"}
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, {**body, "metadata": {"name": NAME}, "spec": {}}
        )
        spoke = SpokeController(options, api_client=api, clock=clock, registry=CollectorRegistry())
        spoke.start()
        try:
            yield server, spoke
        finally:
            spoke.stop()


def drive(reports: list[Report], clock: FakeClock, worker: Worker, writes: Writes) -> Result:
    """Submit every report, the shadow core beside the worker; wait for the last write."""
    result = Result()
    shadow = start(worker.config, clock(), status=worker.last_status, generation=1)
    begin = time.perf_counter()
    for index, report in enumerate(reports):
        now = clock.move(seconds=STEP.total_seconds())
        outcome = apply(shadow, report, now, config=worker.config)
        shadow = outcome.state
        if outcome.changed:
            result.changed.append(index)
            result.expected.append(to_status(shadow))
        result.submitted.append(time.perf_counter())
        verdict = worker.submit(report, timeout=10)
        result.kinds[verdict.kind] = result.kinds.get(verdict.kind, 0) + 1
    writes.wait_for(len(result.changed))
    worker.tick().result(10)
    result.elapsed = time.perf_counter() - begin
    return result


def run(count: int) -> None:
    clock = FakeClock()
    with spoke_on_a_server(clock) as (server, spoke):
        spoke.worker.tick().result(10)  # the initial write is not part of the run
        writes = Writes()
        spoke.worker.on_status_written.append(writes)
        server.clear_audit()
        result = drive(workload(count), clock, spoke.worker, writes)
        result.puts = server.count_requests(
            verbs=("update",), resource=PLURAL, subresource="status"
        )
    show(count, result, writes)


def show(count: int, result: Result, writes: Writes) -> None:
    changed, kinds, elapsed, puts = result.changed, result.kinds, result.elapsed, result.puts
    latencies = [
        (writes.times[k] - result.submitted[i]) * 1000
        for k, i in enumerate(changed[: len(writes.times)])
    ]
    in_order = [_ours(s) for s in writes.statuses] == [_ours(s) for s in result.expected]
    quiet = count - len(changed)  # refusals, heartbeats with the same message, repeated pendings
    print(f"spoke end to end: {count} reports, real client, embedded API server over HTTP")
    print(f"  reports judged per second: {count / elapsed:,.0f}")
    print(f"  accepted reports per second: {kinds.get(VerdictKind.ACCEPTED, 0) / elapsed:,.0f}")
    print("  verdicts: " + ", ".join(f"{k.value} {v}" for k, v in sorted(kinds.items())))
    print(
        f"  submit -> status written: p50 {percentile(latencies, 50):.2f} ms, "
        f"p99 {percentile(latencies, 99):.2f} ms ({len(latencies)} writes)"
    )
    print(
        f"  status PUTs per visible state change: {puts / max(len(changed), 1):.3f} "
        f"({puts} PUTs, {len(changed)} changes; goal 1)"
    )
    print(
        f"  status PUTs for reports that changed nothing (refusals, plain heartbeats): "
        f"{puts - len(changed)} over {quiet} such reports (goal 0)"
    )
    print(f"  written statuses equal the core's, in order: {in_order}")
    if puts != len(changed) or not in_order:
        raise SystemExit(1)


def _ours(status: dict[str, Any]) -> tuple[object, object]:
    return status.get("conditions"), status.get("collectors")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=3000)
    args = parser.parse_args()
    run(args.reports)


if __name__ == "__main__":
    main()
