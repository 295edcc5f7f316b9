"""The fleet view over a large hub: N hub copies (one per cluster namespace) in an embedded API
server, listed by `addon-status fleet`'s own read (`controller.fleet.copies.list_hub_copies`
through the seam's `RestKube` on the project's own connection: across all namespaces over HTTP,
in pages of 500 turned into rows as they arrive) and summarised by its pure logic
(`controller.fleet.view`: rows, summary, table and JSON); then the whole command,
`addon-status fleet` as its own process, its wall time from start to exit and its peak RSS.
Goal at 20,000: the command in at most 1.5 s and 150 MiB.

The hub runs in a process of its own, as a real hub does: in one process the server's thread
would take turns with the view for the GIL and the view's garbage collector would walk the
server's 5,000 stored objects too. `--copy-size realistic` (the default): each copy is what a
spoke replicates with `--hub-copy status`, played through the real core (tests/bench/realistic.py:
the seed profile's conditions, a history of 10, versions, related objects, two resources, about
8 KB; 1% near the 256 KiB budget). `--copy-size small`: the copies measured before, a seeded mix
of states (most Available, some Degraded / Progressing, a few with no status yet), five standard
conditions each, Ready and versions. They are written straight to the server's storage (no
HTTP): loading is set-up, not measured. The server's audit says how many list calls the view
made.

    .venv/bin/python tests/bench/fleet_view.py [--clusters 20000] [--runs 5] [--seed 1]
                                               [--copy-size realistic|small]
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


from controller.fleet.copies import COPY_NAME, PAGE, list_clusters, list_hub_copies  # noqa: E402
from controller.fleet.view import Filters, as_json, as_table, summarise  # noqa: E402
from controller.hub.mirror import cluster_namespace  # noqa: E402
from controller.kube.connection import Connection  # noqa: E402
from controller.kube.kubeconfig import kubeconfig_yaml  # noqa: E402
from controller.kube.rest import RestKube  # noqa: E402
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION  # noqa: E402
from kubesim import APIServer  # noqa: E402
from tests.bench import realistic  # noqa: E402

CRD = ROOT / "manifests" / "base" / "crd.yaml"
NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TYPES = ("Available", "Progressing", "Degraded", "Disabled", "NotSupported")
MIX = (("Available", "ForwardSuccessful", 0.85), ("Degraded", "ForwardFailure", 0.08),
       ("Progressing", "UpdateSuccessful", 0.05), (None, "", 0.02))  # fmt: skip


def hub_copy(cluster: str, rng: random.Random) -> dict[str, Any]:
    state, reason = rng.choices([(s, r) for s, r, _ in MIX], [w for *_, w in MIX])[0]
    obj: dict[str, Any] = {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
        "metadata": {"name": COPY_NAME, "namespace": cluster},
        "spec": {"enableMetrics": True},
    }  # fmt: skip
    if state is None:
        return obj
    since = (NOW - timedelta(minutes=rng.randint(1, 3000))).strftime("%Y-%m-%dT%H:%M:%SZ")
    conditions = [
        {"type": t, "status": "True" if t == state else "False",
         "reason": reason if t == state else "AsExpected", "lastTransitionTime": since,
         "message": f"MetricsCollector: {reason}\nUwlMetricsCollector: {reason}"
         if t == state else ""}
        for t in TYPES
    ]  # fmt: skip
    ready = {"type": "Ready", "status": "True" if state == "Available" else "False",
             "reason": "Ready", "message": "", "lastTransitionTime": since}  # fmt: skip
    versions = [{"name": "metrics-collector", "version": "2.14.0"},
                {"name": "uwl-metrics-collector", "version": "2.14.0"}]  # fmt: skip
    obj["status"] = {"conditions": [*conditions, ready], "versions": versions}
    return obj


def realistic_copy(cluster: str, lives: realistic.Lives) -> dict[str, Any]:
    """A hub copy played through the real core (tests/bench/realistic.py)."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
        "metadata": {"name": COPY_NAME, "namespace": cluster},
        "spec": {"enableMetrics": True}, "status": lives.copy("first"),
    }  # fmt: skip


def serve(clusters: int, seed: int, size: str) -> int:
    """The hub process: load the copies, print the URL, answer `count` with the list calls
    audited so far, stop when stdin closes."""
    rng = random.Random(seed)
    names = [f"cluster-{i:05d}" for i in range(clusters)]
    played = realistic.fleet(clusters) if size == "realistic" else []
    with APIServer([CRD], namespaces=["default"]) as hub:
        for index, name in enumerate(names):
            hub.put_object("", "v1", "namespaces", cluster_namespace(name))
            copy = realistic_copy(name, played[index]) if played else hub_copy(name, rng)
            hub.put_object(GROUP, VERSION, PLURAL, copy)
        print(hub.url, flush=True)
        for _ in sys.stdin:
            print(hub.count_requests(verbs=["list"], resource=PLURAL), flush=True)
    return 0


def view(kube: RestKube) -> tuple[int, list[float]]:
    """One view: list (into rows), then the summary, then the table, then the JSON; ms each."""
    t0 = time.perf_counter()
    listing = list_hub_copies(kube)
    clusters = list_clusters(kube)
    t1 = time.perf_counter()
    rows = [row for row in listing.rows if row.cluster in clusters]
    summary = summarise(Filters().apply(rows), NOW)
    t2 = time.perf_counter()
    as_table(rows, summary, total=len(rows))
    t3 = time.perf_counter()
    as_json(rows, summary, total=len(rows))
    t4 = time.perf_counter()
    return len(rows), [(b - a) * 1000 for a, b in itertools.pairwise((t0, t1, t2, t3, t4))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--copy-size",
        choices=("realistic", "small"),
        default="realistic",
        help="realistic: played through the core, ~8 KB, 1%% near the budget; small: ~1 KB",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.clusters, args.seed, args.copy_size)
    started = time.perf_counter()
    command = [sys.executable, __file__, "--serve", "--clusters", str(args.clusters),
               "--seed", str(args.seed), "--copy-size", args.copy_size]  # fmt: skip
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as hub:
        assert hub.stdin is not None and hub.stdout is not None
        url = hub.stdout.readline().strip()
        loaded = time.perf_counter() - started
        api = Connection(url)
        runs = [view(RestKube(api, request_timeout=60.0)) for _ in range(args.runs)]
        hub.stdin.write("count\n")
        hub.stdin.flush()
        lists = int(hub.stdout.readline())
        api.close()
        commands = [command_run(url, form) for form in ("table", "json") for _ in range(args.runs)]
        hub.stdin.close()
    listed = runs[-1][0]
    columns = zip(*(r[1] for r in runs), strict=True)
    figures = dict(zip(("list", "rows", "table", "json"), columns, strict=True))
    table_views = [f[0] + f[1] + f[2] for _, f in runs]
    json_views = [f[0] + f[1] + f[3] for _, f in runs]
    print(
        f"fleet view: {args.clusters} hub copies ({args.copy_size}) in {args.clusters} namespaces, "
        f"the hub in its own process (loaded in {loaded:.1f} s, not measured); {args.runs} runs; "
        "ms per run"
    )
    for label, values in [*figures.items(), ("view table", table_views),
                          ("view json", json_views)]:  # fmt: skip
        print(f"  {label} ms: " + " ".join(f"{v:8.1f}" for v in values))
    for label, values in (("view table", table_views), ("view json", json_views)):
        print(f"  {label} ms, median: {statistics.median(values):.1f}")
    pages = -(-args.clusters // PAGE)
    print(f"  list calls per view: {lists / args.runs:g}")
    print(f"  rows listed: {listed}")
    print(f"  one list call per page of {PAGE}: {lists == args.runs * pages}")
    walls, peaks = [c[0] for c in commands], [c[1] for c in commands]
    print(f"addon-status fleet, the whole command ({len(commands)} runs, table then json)")
    print("  wall s: " + " ".join(f"{w:8.2f}" for w in walls))
    print("  peak RSS MiB: " + " ".join(f"{p:8.0f}" for p in peaks))
    print(f"  wall s, median: {statistics.median(walls):.2f}")
    print(f"  peak RSS MiB, median: {statistics.median(peaks):.0f}")
    return 0 if lists == args.runs * pages and listed == args.clusters else 1


def command_run(url: str, form: str) -> tuple[float, float]:
    """`addon-status fleet --format FORM` as its own process: wall seconds, peak RSS MiB."""
    with tempfile.TemporaryDirectory(prefix="fleet-view-") as directory:
        kubeconfig = Path(directory) / "kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=url, token="viewer"), "utf-8")
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "fleet", "--kubeconfig", str(kubeconfig),
             "--format", form], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        )  # fmt: skip
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"FAILED: addon-status fleet exited with {status}")
    return wall, usage.ru_maxrss / 1024


if __name__ == "__main__":
    sys.exit(main())
