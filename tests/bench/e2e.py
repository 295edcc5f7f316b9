"""End to end: a report over HTTP, through the core, to the spoke status and on to the hub copy.

Every part on the path is the real one, assembled by `controller.spoke.app.Replica` as `addon-status
run --insecure --hub-kubeconfig FILE --cluster-name cluster1` assembles it: `ReportClient`
posts each report to the report API (loopback, no authentication) in front of the reconcile
worker; the worker judges it with the core and writes the spoke status on an embedded API
server over the project's own connection (`controller.kube.connection`); the `HubReplicator`
behind `worker.on_status_written` copies the status (its conditions, the default `--hub-copy`)
to the addon CR's copy on a second embedded API server, the hub. A watch on the hub copy (the
project's own list-then-watch loop) times when each change shows there. Only the clock is
fake (see below).

Prints, for each of `--runs` runs on fresh servers and their median: reports judged and
accepted per second; p50/p99 from a report sent to the spoke status written, and to the hub
copy written (over the changes of the conditions, the part that is copied; a change that a
newer write covered counts as written then); spoke status writes per visible state change
(goal: exactly 1; and 0 for heartbeats and refusals); hub writes per visible state change
(goal: no more than the spoke's); status write conflicts (409) per visible change, over the
reports and then over `--spec-changes` edits of the CR's spec (goal 0: nobody else writes the
status, so every conflict would be one the controller caused itself). A shadow copy of the
core, fed the same reports at the same times, says which reports change the status; the
written statuses must be exactly the shadow's, in order. The fake clock moves 10 ms per
report, so dampening windows open (and are written once) but never run out during a run:
every write belongs to one report.

`--baseline REV` runs REV's own e2e.py and this tree's in alternating fresh processes (REV in
a temporary worktree) and prints both medians of every figure they share.

    .venv/bin/python tests/bench/e2e.py [--reports 1000] [--runs 3] [--spec-changes 20]
                                        [--baseline REV]
"""

from __future__ import annotations

import argparse
import bisect
import json
import random
import statistics
import sys
import tempfile
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
sys.path.insert(0, str(Path(__file__).resolve().parent))  # baseline.py, for --baseline

from kubernetes import client  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from controller.kube.api import WatchEvent  # noqa: E402
from controller.kube.connection import Connection  # noqa: E402
from controller.kube.kubeconfig import kubeconfig_yaml  # noqa: E402
from controller.kube.rest import RestKube  # noqa: E402
from controller.reporter.client import ReportClient  # noqa: E402
from controller.spoke.addon import GROUP, PLURAL, VERSION, AddonRef  # noqa: E402
from controller.spoke.app import Replica  # noqa: E402
from controller.spoke.options import Address, RunOptions  # noqa: E402
from controller.spoke.watches import addon_watch  # noqa: E402
from controller.spoke.worker import Worker  # noqa: E402
from kubesim import DEFAULT_NAMESPACES, APIServer  # noqa: E402
from statemachines import Report, VerdictKind, apply, start, to_status  # noqa: E402
from tests.clock import FakeClock  # noqa: E402
from tests.names import MC, UWL, R  # noqa: E402
from tests.spoke.fakes import NAME, NAMESPACE  # noqa: E402

CRD = ROOT / "manifests" / "base" / "crd.yaml"
STEP = timedelta(milliseconds=10)
CLUSTER = "cluster1"  # the managed cluster's namespace on the hub
KIND = "ObservabilityAddon"


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


class HubView:
    """What a reader of the hub sees: every change of the hub copy's conditions, timed on
    arrival through the project's own list-then-watch loop with the real client."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.conditions: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, event: WatchEvent) -> None:
        if event.type != "MODIFIED":
            return
        found = _key((event.object.get("status") or {}).get("conditions"))
        with self._lock:
            if not self.conditions or self.conditions[-1] != found:
                self.times.append(time.perf_counter())
                self.conditions.append(found)

    def clear(self) -> None:
        with self._lock:
            self.times.clear()
            self.conditions.clear()

    def reached(self, wanted: list[str]) -> list[float | None]:
        """When the hub first held each wanted conditions, or newer ones: a copy matches the
        earliest not yet reached change that has its conditions (latest state wins, so every
        change before it is covered by it)."""
        positions: dict[str, list[int]] = {}
        for index, key in enumerate(wanted):
            positions.setdefault(key, []).append(index)
        found: list[float | None] = [None] * len(wanted)
        done = 0
        with self._lock:
            seen = list(zip(self.times, self.conditions, strict=True))
        for at, key in seen:
            candidates = positions.get(key, [])
            after = bisect.bisect_left(candidates, done)
            if after == len(candidates):
                continue
            match = candidates[after]
            found[done : match + 1] = [at] * (match + 1 - done)
            done = match + 1
        return found


def _key(conditions: object) -> str:
    return json.dumps(conditions, sort_keys=True)


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else 0.0
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


@dataclass
class Stack:
    """What one run drives and measures."""

    spoke_server: APIServer
    hub_server: APIServer
    replica: Replica
    hub_view: HubView


@contextmanager
def running_stack(clock: FakeClock) -> Iterator[Stack]:
    """Spoke and hub API servers with the addon CR and its hub copy, a started `Replica` (the
    controller as `addon-status run --insecure --hub-kubeconfig ... --cluster-name cluster1`
    assembles it) and a watch on the hub copy."""
    hub_namespaces = (*DEFAULT_NAMESPACES, CLUSTER)
    with (
        APIServer([CRD], watch_history=10000) as spoke_server,
        APIServer([CRD], namespaces=hub_namespaces, watch_history=10000) as hub_server,
        tempfile.TemporaryDirectory() as workdir,
        client.ApiClient(client.Configuration(host=spoke_server.url)) as api,
        Connection(spoke_server.url) as spoke_connection,
        Connection(hub_server.url) as hub_connection,
    ):
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND, "spec": {}}
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, {**body, "metadata": {"name": NAME}}
        )
        hub_server.put_object(
            GROUP, VERSION, PLURAL, {**body, "metadata": {"name": NAME, "namespace": CLUSTER}}
        )
        kubeconfig = Path(workdir) / "hub-kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub_server.url, token="unused"))
        loopback = Address(host="127.0.0.1", port=0)
        options = RunOptions(
            metrics_address=loopback,
            probe_address=loopback,
            report_address="127.0.0.1:0",
            insecure=True,
            hub_kubeconfig=kubeconfig,
            cluster_name=CLUSTER,
            stale_after=timedelta(hours=6),
        )
        hub_view = HubView()
        hub_watch = addon_watch(RestKube(hub_connection), AddonRef(CLUSTER, NAME), hub_view)
        replica = Replica(
            options, api_client=spoke_connection, clock=clock, registry=CollectorRegistry()
        )
        hub_watch.start()
        replica.start()
        try:
            yield Stack(spoke_server, hub_server, replica, hub_view)
        finally:
            replica.stop()
            hub_watch.stop()


@dataclass
class Trace:
    """One run as it happened: when each report went out, what the shadow core expected."""

    submitted: list[float] = field(default_factory=list)  # perf_counter before each POST
    changed: list[int] = field(default_factory=list)  # reports that change the status
    expected: list[dict[str, Any]] = field(default_factory=list)  # the core's statuses
    copied: list[int] = field(default_factory=list)  # reports that change the conditions
    copied_keys: list[str] = field(default_factory=list)  # ... and the conditions they made
    kinds: dict[VerdictKind, int] = field(default_factory=dict)
    elapsed: float = 0.0


def drive(
    reports: list[Report],
    clock: FakeClock,
    worker: Worker,
    *,
    status: dict[str, Any],
    url: str,
    writes: Writes,
) -> Trace:
    """POST every report, the shadow core beside the worker; wait for the last spoke write."""
    trace = Trace()
    shadow = start(worker.config, clock(), status=status, generation=1)
    hub_holds = _key(status.get("conditions"))
    with ReportClient(url, timeout=10.0, deadline=30.0) as reporter:
        begin = time.perf_counter()
        for index, report in enumerate(reports):
            now = clock.move(seconds=STEP.total_seconds())
            outcome = apply(shadow, report, now, config=worker.config)
            shadow = outcome.state
            if outcome.changed:
                trace.changed.append(index)
                trace.expected.append(to_status(shadow))
                if (key := _key(trace.expected[-1]["conditions"])) != hub_holds:
                    trace.copied.append(index)
                    trace.copied_keys.append(hub_holds := key)
            trace.submitted.append(time.perf_counter())
            answer = reporter.report(
                report.collector, reason=report.reason.value, message=report.message
            )
            kind = VerdictKind(answer["verdict"])
            trace.kinds[kind] = trace.kinds.get(kind, 0) + 1
        writes.wait_for(len(trace.changed))
        worker.tick().result(10)
        trace.elapsed = time.perf_counter() - begin
    return trace


@dataclass
class Run:
    """The figures of one run, and the checks that make them meaningful."""

    figures: dict[str, float]
    kinds: dict[VerdictKind, int]
    changes: int
    copied: int  # changes of the conditions, the part the hub copies
    spoke_puts: int
    hub_puts: int
    in_order: bool  # the spoke got exactly the core's statuses, in order
    hub_reached: bool  # the hub showed every change of the conditions (or a newer one)
    hub_current: bool  # and holds the spoke's final conditions

    @property
    def failures(self) -> list[str]:
        found = []
        if self.spoke_puts != self.changes:
            found.append(f"{self.spoke_puts} spoke writes for {self.changes} changes")
        if not self.in_order:
            found.append("the written statuses differ from the core's")
        if self.hub_puts > self.spoke_puts:
            found.append(f"{self.hub_puts} hub writes, more than the spoke's {self.spoke_puts}")
        if not self.hub_reached:
            found.append("a change of the conditions never showed on the hub")
        if not self.hub_current:
            found.append("the hub copy does not hold the spoke's final conditions")
        return found


def one_run(reports: list[Report], spec_changes: int) -> Run:
    clock = FakeClock()
    with running_stack(clock) as stack:
        worker, replicator = stack.replica.worker, stack.replica.replication.replicator
        assert replicator is not None
        worker.tick().result(10)  # the initial write, and its hub copy, are not part of the run
        if not replicator.wait_synced(30):
            raise SystemExit("the hub copy did not catch up with the initial status")
        writes = Writes()
        worker.on_status_written.append(writes)
        stack.spoke_server.clear_audit()
        stack.hub_server.clear_audit()
        stack.hub_view.clear()
        status = spoke_status(stack.spoke_server)
        url = stack.replica.report_url
        trace = drive(reports, clock, worker, status=status, url=url, writes=writes)
        if not replicator.wait_synced(30):
            raise SystemExit("the hub copy did not catch up within 30 s")
        final = _key(spoke_status(stack.spoke_server).get("conditions"))
        _wait(lambda: stack.hub_view.conditions[-1:] == [final] or not trace.copied)
        puts = {"verbs": ("update",), "resource": PLURAL, "subresource": "status"}
        spoke_puts = stack.spoke_server.count_requests(**puts)  # type: ignore[arg-type]
        hub_puts = stack.hub_server.count_requests(**puts)  # type: ignore[arg-type]
        hub = stack.hub_server.get_object(GROUP, VERSION, PLURAL, CLUSTER, NAME) or {}
        hub_current = _key((hub.get("status") or {}).get("conditions")) == final
        hub_times = stack.hub_view.reached(trace.copied_keys)
        conflicts = conflicts_on(stack.spoke_server)
        counts = (spoke_puts, hub_puts)
        run = measure(trace, writes, hub_times, puts=counts, hub_current=hub_current)
        spec_conflicts = edit_spec(stack, writes, spec_changes)
    run.figures["status write conflicts per visible change (goal 0)"] = conflicts / max(
        len(trace.changed), 1
    )
    run.figures["... per spec change (goal 0)"] = spec_conflicts / max(spec_changes, 1)
    return run


def spoke_status(server: APIServer) -> dict[str, Any]:
    obj = server.get_object(GROUP, VERSION, PLURAL, NAMESPACE, NAME) or {}
    return dict(obj.get("status") or {})


def conflicts_on(server: APIServer) -> int:
    """Status writes the server refused, all of them 409 here (nothing else fails)."""
    status = {"verbs": ("update",), "resource": PLURAL, "subresource": "status"}
    tried = server.count_requests(**status, successful=False)  # type: ignore[arg-type]
    return tried - server.count_requests(**status)  # type: ignore[arg-type]


def edit_spec(stack: Stack, writes: Writes, count: int) -> int:
    """Edit the spec `count` times, each time waiting for the status write that follows the
    new generation; the conflicts that cost."""
    stack.spoke_server.clear_audit()
    with client.ApiClient(client.Configuration(host=stack.spoke_server.url)) as api:
        objects = client.CustomObjectsApi(api)
        for index in range(count):
            written = len(writes.times)
            objects.patch_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, NAME, {"spec": {"edit": index}}
            )
            writes.wait_for(written + 1)
    return conflicts_on(stack.spoke_server)


def _wait(done: Callable[[], bool], timeout: float = 10.0) -> None:
    """The watch delivers the hub's last change a moment after the replicator wrote it."""
    deadline = time.monotonic() + timeout
    while not done() and time.monotonic() < deadline:
        time.sleep(0.01)


def measure(
    trace: Trace,
    writes: Writes,
    hub_times: list[float | None],
    *,
    puts: tuple[int, int],
    hub_current: bool,
) -> Run:
    (spoke_puts, hub_puts), changed, elapsed = puts, trace.changed, trace.elapsed
    spoke_ms = [(writes.times[k] - trace.submitted[i]) * 1000 for k, i in enumerate(changed)]
    hub_ms = [
        (t - trace.submitted[i]) * 1000
        for t, i in zip(hub_times, trace.copied, strict=True)
        if t is not None
    ]
    changes = max(len(changed), 1)
    figures = {
        "reports judged per second": len(trace.submitted) / elapsed,
        "accepted reports per second": trace.kinds.get(VerdictKind.ACCEPTED, 0) / elapsed,
        "report -> spoke status written, p50 ms": percentile(spoke_ms, 50),
        "report -> spoke status written, p99 ms": percentile(spoke_ms, 99),
        "report -> hub copy written, p50 ms": percentile(hub_ms, 50),
        "report -> hub copy written, p99 ms": percentile(hub_ms, 99),
        "spoke status writes per visible change (goal 1)": spoke_puts / changes,
        "hub writes per visible change (goal <= spoke's)": hub_puts / changes,
        "spoke writes for reports changing nothing (goal 0)": float(spoke_puts - len(changed)),
    }
    in_order = [_ours(s) for s in writes.statuses] == [_ours(s) for s in trace.expected]
    return Run(
        figures,
        trace.kinds,
        len(changed),
        len(trace.copied),
        spoke_puts,
        hub_puts,
        in_order,
        len(hub_ms) == len(trace.copied),
        hub_current,
    )


def _ours(status: dict[str, Any]) -> tuple[object, object]:
    return status.get("conditions"), status.get("collectors")


def show(count: int, runs: list[Run]) -> None:
    print(f"end to end over HTTP: {count} reports per run, {len(runs)} run(s), fresh servers each")
    print("  real: ReportClient -> report API -> worker -> core -> spoke status (RestKube,")
    print("  embedded API server) -> HubReplicator -> hub copy (second embedded API")
    print("  server), assembled by controller.spoke.app.Replica (--insecure, loopback); the hub")
    print("  copy timed by a watch on it; fake: the clock (10 ms per report)")
    header = "".join(f"{f'run {n}':>10}" for n in range(1, len(runs) + 1))
    print(f"  {'figure':<52}{'median':>10}{header}")
    for name in runs[0].figures:
        values = [run.figures[name] for run in runs]
        cells = "".join(f"{v:>10.{_digits(name)}f}" for v in [statistics.median(values), *values])
        print(f"  {name + ':':<52}{cells}")
    first = runs[0]
    kinds = ", ".join(f"{k.value} {v}" for k, v in sorted(first.kinds.items()))
    print(f"  verdicts (run 1): {kinds}")
    print(
        f"  visible changes (run 1): {first.changes}, {first.copied} of them change the "
        f"conditions (the part copied to the hub); spoke writes {first.spoke_puts}, hub "
        f"writes {first.hub_puts}"
    )
    print(f"  written statuses equal the core's, in order: {all(r.in_order for r in runs)}")
    print(f"  hub copy showed every change of the conditions: {all(r.hub_reached for r in runs)}")
    print(f"  hub copy holds the spoke's final conditions: {all(r.hub_current for r in runs)}")
    failures = [f"run {n}: {why}" for n, run in enumerate(runs, 1) for why in run.failures]
    for failure in failures:
        print(f"  FAILED {failure}")
    if failures:
        raise SystemExit(1)


def _digits(name: str) -> int:
    if "per visible change" in name or "per spec change" in name:
        return 3
    return 2 if " ms" in name else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--reports", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--spec-changes", type=int, default=20)
    parser.add_argument("--baseline", metavar="REV", help="measure REV beside this tree")
    args = parser.parse_args()
    if args.baseline:
        side_by_side(args.baseline, args.reports, args.runs, args.spec_changes)
        return
    reports = workload(args.reports)
    show(args.reports, [one_run(reports, args.spec_changes) for _ in range(args.runs)])


def side_by_side(revision: str, reports: int, runs: int, spec_changes: int) -> None:
    """REV's own e2e.py and this tree's, a fresh process each, alternating `runs` times on the
    same workload; the median of each figure both print, and the range of the runs."""
    from baseline import figures_of, run_in, worktree

    argv = ("--reports", str(reports), "--runs", "1")
    found: dict[str, list[dict[str, float]]] = {"baseline": [], "this tree": []}
    with worktree(revision) as tree:
        for _ in range(runs):
            found["baseline"].append(figures_of(run_in(tree, "e2e.py", *argv)))
            ours = run_in(ROOT, "e2e.py", *argv, "--spec-changes", str(spec_changes))
            found["this tree"].append(figures_of(ours))
    print(f"end to end, side by side: {reports} reports, {runs} alternating runs each")
    header = f"  {'figure':<52}{revision:>12}{'this tree':>12}"
    print(f"{header}   (lowest-highest run of each)")
    for name in found["this tree"][0]:
        if name not in found["baseline"][0]:
            continue
        runs_of = [sorted(f[name] for f in found[k]) for k in ("baseline", "this tree")]
        digits = _digits(name)
        cells = "".join(f"{statistics.median(r):>12.{digits}f}" for r in runs_of)
        spread = "   ".join(f"{r[0]:.{digits}f}-{r[-1]:.{digits}f}" for r in runs_of)
        print(f"  {name + ':':<52}{cells}   ({spread})")


if __name__ == "__main__":
    main()
