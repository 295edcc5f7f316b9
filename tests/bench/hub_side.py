"""The hub side on a fleet: `addon-status hub` as its own process (one replica, the real client
over HTTP), against an embedded hub in this process holding N cluster namespaces, each with a
hub copy and a ManagedClusterAddOn (kubesim serving the upstream CRD).

For each N (default 1,000, 3,500 — ACM's reference hub — and 10,000, the project's goal), the
median of `--runs` runs, each on a fresh server and process:

- first full mirror (s): from starting the process to every ManagedClusterAddOn written;
- burst (s): every hub copy changes at once (a visible change: `Degraded` moves); until all
  are mirrored again, and the rate against the first mirror's;
- writes per cluster of each phase (goal: exactly 1.00 for the first mirror and a visible
  change, 0.00 for a change the hub side does not mirror and for a resync);
- resync reads per cluster: GETs of ManagedClusterAddOns while one resync runs (goal 0: both
  kinds are kept by watches), and reads per cluster over the whole run;
- the process's RSS once mirrored and its peak (VmHWM);
- beside OCM's own writers (controller/demo/ocm_writers.py: the addon manager's `Progressing`
  on every event, the health check's `Available` resynced every 30 s, here at `--ocm-scale`
  times real time), once they have written every ManagedClusterAddOn: the hub side's writes per
  cluster per simulated hour at steady state (goal 0), and OCM's;
- decoding one answer: the largest list page of each kind (500 items) decoded by the hub side's
  own informers in a process of their own: tracemalloc's peak around
  `controller.kube.listing.decode_page` (the answer counted) and around the whole
  `RestKube.list` (the answer read as well), each per byte on the wire (goal ≤ 3), and that
  process's RSS before, at the peak of and after its first list of each kind.

`--copy-size realistic` (the default; tests/bench/realistic.py): each hub copy is what a spoke
replicates with `--hub-copy status`, played through the real core — the seed profile's
conditions, a history of 10, versions, related objects, two resources, about 8 KB, and 1% near
the 256 KiB budget — and each ManagedClusterAddOn is left as OCM v1.3 leaves one. The phases
are the same life played on: an update failure or a recovery (visible), a spec change (not
mirrored: `observedGeneration` and `Ready` move), then a visible change again. `--copy-size
small`: the ~1 KB copies of six conditions and the bare ManagedClusterAddOns measured before
(the phase not mirrored: a collector's condition only).

Simulated: the spokes (each hub copy is written straight to the server's storage, as
replication would through the API).

    .venv/bin/python tests/bench/hub_side.py [--clusters 1000,3500,10000] [--resync 20]
                                             [--runs 3] [--copy-size realistic|small]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from prometheus_client import CollectorRegistry  # noqa: E402

from controller.demo.ocm_writers import OcmWriters  # noqa: E402
from controller.hub.caches import HubCaches, Watches  # noqa: E402
from controller.hub.metrics import MirrorMetrics  # noqa: E402
from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA  # noqa: E402
from controller.hub.mirror import cluster_namespace, managed_cluster_addon  # noqa: E402
from controller.kube.api import ADDON as COPIES  # noqa: E402
from controller.kube.api import ALL_NAMESPACES  # noqa: E402
from controller.kube.backoff import Backoff  # noqa: E402
from controller.kube.connection import Connection  # noqa: E402
from controller.kube.informer import Informer  # noqa: E402
from controller.kube.kubeconfig import kubeconfig_yaml  # noqa: E402
from controller.kube.listing import decode_page  # noqa: E402
from controller.kube.pager import PAGE  # noqa: E402
from controller.kube.rest import RestKube, _event_from  # noqa: E402
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION  # noqa: E402
from tests.bench import realistic  # noqa: E402
from tests.bench.footprint import free_port, ready  # noqa: E402
from tests.hub.hubside import ADDON, COPY, Hub, hub_server, seed  # noqa: E402

MIB = 1024 * 1024
GOALS: Final = {  # clusters -> (first mirror s, peak MiB, once mirrored MiB), issue 32
    10_000: (30.0, 150.0, 100.0),
    3_500: (None, 120.0, None),
}
DECODE_GOAL: Final = 3.0  # peak bytes while decoding an answer, per byte of it on the wire


# --- the copies ---------------------------------------------------------------------------------


class SmallCopies:
    """The ~1 KB copies measured before: six conditions; a bare ManagedClusterAddOn."""

    name = "small"

    def status(self, index: int, phase: str) -> dict[str, Any]:
        if phase == "quiet":  # a collector's condition only
            quiet = seed(reason="ForwardFailed")
            quiet[-1] = {**quiet[-1], "reason": "ForwardFailure"}
            return {"conditions": quiet}
        reasons = {"first": "UpdateSuccessful", "visible": "ForwardFailed", "last": "UpdateFailed"}
        return {"conditions": seed(reason=reasons[phase])}

    def addon(self, cluster: str, index: int) -> dict[str, Any]:
        return managed_cluster_addon(cluster, ADDON)


class RealisticCopies:
    """Copies played through the real core, ManagedClusterAddOns as OCM v1.3 leaves them
    (tests/bench/realistic.py); the lives are played once and kept for every run."""

    name = "realistic"

    def __init__(self, count: int) -> None:
        began = time.perf_counter()
        self.lives = realistic.fleet(count)
        self.played = time.perf_counter() - began

    def status(self, index: int, phase: str) -> dict[str, Any]:
        return self.lives[index].copy(phase)

    def addon(self, cluster: str, index: int) -> dict[str, Any]:
        return realistic.managed_cluster_addon(cluster, ADDON, index)


Copies = SmallCopies | RealisticCopies


# --- one size -----------------------------------------------------------------------------------


def _put_copy(hub: Hub, cluster: str, status: dict[str, Any]) -> None:
    hub.server.put_object(GROUP, VERSION, PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
        "metadata": {"name": COPY, "namespace": cluster},
        "spec": {"enableMetrics": True}, "status": status,
    })  # fmt: skip


def _reads(hub: Hub) -> int:
    """GETs of ManagedClusterAddOns by the hub side (not the benchmark's own decoding probe)."""
    return hub.server.count_requests(verbs=("get",), resource=MCA.plural, user="hub-side-a")


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for {pid}")


def _cpu(pid: int) -> float:
    """User + system CPU seconds `pid` has spent (/proc/PID/stat's utime and stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_writes(hub: Hub, total: int, timeout: float) -> float:
    """Seconds until the hub holds `total` ManagedClusterAddOn writes."""
    started = time.perf_counter()
    while hub.writes() < total:
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"FAILED: {hub.writes()} of {total} writes after {timeout:.0f} s")
        time.sleep(0.05)
    return time.perf_counter() - started


def _beside_ocm(hub: Hub, count: int, scale: float, window: float) -> dict[str, float]:
    """The hub side's and OCM's writes per cluster per simulated hour, OCM's writers running."""
    with Connection(hub.server.url, token="admin") as api:
        ocm = OcmWriters(RestKube(api, request_timeout=30.0), addon_name=ADDON, time_scale=scale)
        ocm.start()
        try:
            settled, last = time.perf_counter(), -1
            while ocm.writes != last or time.perf_counter() - settled < 5.0:
                if ocm.writes != last:
                    last, settled = ocm.writes, time.perf_counter()
                time.sleep(0.5)  # until OCM has written every ManagedClusterAddOn once
            side, theirs = hub.writes(user="hub-side-a"), ocm.writes
            time.sleep(window)
            hours = window * scale / 3600
            return {"ocm_first": theirs / count,
                    "ocm_side_writes": (hub.writes(user="hub-side-a") - side) / count / hours,
                    "ocm_writes": (ocm.writes - theirs) / count / hours}  # fmt: skip
        finally:
            ocm.stop()


def _load(hub: Hub, clusters: list[str], copies: Copies) -> float:
    """MB the copies take on the wire (compact JSON), once loaded."""
    wire = 0
    for index, cluster in enumerate(clusters):
        hub.server.put_object("", "v1", "namespaces", cluster_namespace(cluster))
        hub.server.put_object(MCA.group, MCA.version, MCA.plural, copies.addon(cluster, index))
        status = copies.status(index, "first")
        wire += len(json.dumps(status, separators=(",", ":")))
        _put_copy(hub, cluster, status)
    return wire / 1e6


def one_size(
    count: int, resync: float, workdir: Path, ocm: tuple[float, float], copies: Copies
) -> dict[str, float]:
    clusters = [f"cluster{i:05d}" for i in range(count)]
    timeout = 120 + count / 50
    with hub_server() as hub:
        figures: dict[str, float] = {"status_mb": _load(hub, clusters, copies)}
        figures |= _decoding(hub.server.url)
        kubeconfig = workdir / f"hub-{count}"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.server.url, token="hub-a"), "utf-8")
        probes = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ADDON_STATUS_"))}
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "hub", "--kubeconfig", str(kubeconfig),
             "--metrics-address", f"127.0.0.1:{free_port()}",
             "--probe-address", f"127.0.0.1:{probes}", "--resync", f"{resync:g}",
             "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            _wait_writes(hub, count, timeout)
            figures["first"] = time.perf_counter() - started
            figures["first_cpu"] = _cpu(process.pid)
            figures["first_writes"] = hub.writes() / count
            figures["rss"] = _status(process.pid, "VmRSS") / MIB
            figures["peak_mirrored"] = _status(process.pid, "VmHWM") / MIB
            if not ready(f"http://127.0.0.1:{probes}/readyz"):
                raise SystemExit("FAILED: the hub side is not ready once mirrored")
            # a burst: every copy changes at once
            before, burst_started = hub.writes(), time.perf_counter()
            for index, cluster in enumerate(clusters):
                _put_copy(hub, cluster, copies.status(index, "visible"))
            figures["burst_put"] = time.perf_counter() - burst_started
            cpu = _cpu(process.pid)
            _wait_writes(hub, before + count, timeout)
            figures["burst"] = time.perf_counter() - burst_started
            figures["burst_cpu"] = _cpu(process.pid) - cpu
            figures["burst_writes"] = (hub.writes() - before) / count
            # a change not mirrored, then one visible change that follows them all through the
            # watch: once it is mirrored, everything before it was seen
            before = hub.writes()
            for index, cluster in enumerate(clusters):
                _put_copy(hub, cluster, copies.status(index, "quiet"))
            _put_copy(hub, clusters[-1], copies.status(count - 1, "last"))
            _wait_writes(hub, before + 1, timeout)
            figures["quiet_writes"] = (hub.writes() - before - 1) / count
            # one resync: it reads nothing and writes nothing
            before, reads = hub.writes(), _reads(hub)
            time.sleep(resync + 2.0)
            figures["resync_writes"] = (hub.writes() - before) / count
            figures["resync_reads"] = (_reads(hub) - reads) / count
            figures["reads"] = _reads(hub) / count
            figures |= _beside_ocm(hub, count, *ocm)
            figures["rss_end"] = _status(process.pid, "VmRSS") / MIB
            figures["peak"] = _status(process.pid, "VmHWM") / MIB
        finally:
            process.terminate()
            process.wait(30)
    return figures


# --- decoding one answer, in a process of its own -----------------------------------------------


def _decoding(url: str) -> dict[str, float]:
    """`--decode URL` in a fresh process (no server threads allocating beside it)."""
    done = subprocess.run(
        [sys.executable, __file__, "--decode", url],
        capture_output=True, text=True, check=False, cwd=ROOT, timeout=600,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"FAILED: decoding: {done.stderr[-2000:]}")
    found: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return found


def _own(field: str) -> int:
    return _status(os.getpid(), field)


def _reset_peak() -> None:
    """VmHWM starts again from the current RSS (Linux, /proc/PID/clear_refs)."""
    Path("/proc/self/clear_refs").write_text("5")


def decode(url: str) -> dict[str, float]:
    """What the hub side's informers pay for one answer and for their first list of the hub
    copies and of the ManagedClusterAddOns: the largest page of each, fetched raw, then
    decoded by `decode_page` with the informer's own projection under tracemalloc (its peak,
    the answer included, per byte of the answer), then read and decoded by `RestKube.list`
    (the reading too); then each informer's first list (every page, the store filled), with
    this process's RSS before, at its peak and after."""
    figures: dict[str, float] = {}
    with Connection(url, token="admin") as api:
        kube = RestKube(api, request_timeout=60.0)
        caches = HubCaches(
            kube, addon_name=ADDON, copy_name=COPY, namespace_selector="",
            metrics=MirrorMetrics(CollectorRegistry()), changed=lambda namespace: None,
            synced=lambda: None, backoff=Backoff(), watch_seconds=60, watches=Watches(),
            clock=lambda: realistic.EPOCH,
        )  # fmt: skip
        kinds: tuple[tuple[str, Any, Informer[Any]], ...] = (
            ("copies", COPIES, caches.copies), ("addons", MCA, caches.addons),
        )  # fmt: skip
        for label, _, informer in kinds:  # first, while nothing else has grown the heap
            before = _own("VmRSS")
            _reset_peak()
            informer.reflector._list()  # the first list: every page, the store filled
            figures[f"{label}_list_before"] = before / MIB
            figures[f"{label}_list_peak"] = _own("VmHWM") / MIB
            figures[f"{label}_list_after"] = _own("VmRSS") / MIB
            figures[f"{label}_kept"] = len(informer.items())
        for label, resource, informer in kinds:
            keep: Callable[[dict[str, Any]], Any] = informer._entry  # what the store keeps
            tracemalloc.start()
            held = bytes(memoryview(_largest_page(api, resource.path(ALL_NAMESPACES))))
            tracemalloc.reset_peak()  # from here: the answer, and what decoding it takes
            page = decode_page(held, keep, "decode", informer.reflector.selection.reads)
            decoded_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            figures[f"{label}_page_mb"] = len(held) / 1e6
            figures[f"{label}_page_items"] = len(page.items)
            figures[f"{label}_decode_ratio"] = decoded_peak / len(held)
            del page, held
            tracemalloc.start()
            listed = kube.list(
                resource, ALL_NAMESPACES, keep=keep, limit=PAGE,
                reads=informer.reflector.selection.reads,
            )  # fmt: skip
            call_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            figures[f"{label}_call_ratio"] = call_peak / max(listed.size, 1)
            figures[f"{label}_call_mb"] = listed.size / 1e6
            del listed
        # one watch event: the largest object of each kind, as a line of a watch
        for label, resource, informer, name in (
            ("copy", COPIES, caches.copies, COPY), ("addon", MCA, caches.addons, ADDON),
        ):  # fmt: skip
            line = _largest_event(api, resource, name)
            tracemalloc.start()
            held = bytes(memoryview(line))
            tracemalloc.reset_peak()
            event = _event_from(held, "decode", informer.reflector.selection.reads)
            kept = informer._entry(event.object) if event is not None else None
            event_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            figures[f"{label}_event_kb"] = len(held) / 1e3
            figures[f"{label}_event_ratio"] = event_peak / len(held)
            del event, kept, held
    return figures


def _largest_event(api: Connection, resource: Any, name: str) -> bytes:
    """The largest object of `resource` named `name` (each cluster's), as a watch line."""
    largest = b""
    for index in range(realistic.BIG_SHARE):
        path = resource.path(f"cluster{index:05d}", name)
        answer = api.request("GET", path, timeout=60.0)
        if answer.status == 200:
            largest = max(largest, answer.data, key=len)
    return b'{"type":"MODIFIED","object":' + largest + b"}"


def _largest_page(api: Connection, path: str) -> bytes:
    """The largest answer of a paged list of `path`, as the server sent it."""
    largest, token = b"", ""
    while True:
        query = [("limit", str(PAGE))] + ([("continue", token)] if token else [])
        answer = api.request("GET", path, query=query, timeout=60.0).data
        largest = max(largest, answer, key=len)
        token = json.loads(answer).get("metadata", {}).get("continue", "")
        if not token:
            return largest


# --- the table ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--clusters",
        default="1000,3500,10000",
        help="comma-separated sizes (default 1000,3500,10000)",
    )
    parser.add_argument("--resync", type=float, default=20.0, help="the hub side's --resync, s")
    parser.add_argument("--runs", type=int, default=3, help="runs of each size (the median)")
    parser.add_argument(
        "--ocm-scale",
        type=float,
        default=30.0,
        help="OCM's writers run this many times faster than real time",
    )
    parser.add_argument(
        "--ocm-window",
        type=float,
        default=24.0,
        help="seconds the steady state beside OCM is measured",
    )
    parser.add_argument(
        "--copy-size",
        choices=("realistic", "small"),
        default="realistic",
        help="realistic: played through the core, ~8 KB, 1%% near the budget; small: ~1 KB",
    )
    parser.add_argument("--decode", metavar="URL", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.decode:
        print(json.dumps(decode(args.decode)))
        return
    sizes = [int(n) for n in args.clusters.split(",")]
    ocm = (args.ocm_scale, args.ocm_window)
    copies: Copies = RealisticCopies(max(sizes)) if args.copy_size == "realistic" else SmallCopies()
    with tempfile.TemporaryDirectory(prefix="hub-side-") as workdir:
        each = {
            n: [one_size(n, args.resync, Path(workdir), ocm, copies) for _ in range(args.runs)]
            for n in sizes
        }
    show(args, sizes, each, copies)


def show(
    args: argparse.Namespace, sizes: list[int], each: dict[int, list[dict[str, float]]],
    copies: Copies,
) -> None:  # fmt: skip
    for n, found in each.items():
        for figures in found:
            figures["rate"], figures["burst_rate"] = n / figures["first"], n / figures["burst"]
    runs = {
        n: {key: statistics.median(f[key] for f in found) for key in found[0]}
        for n, found in each.items()
    }
    played = (
        f", lives played in {copies.played:.0f} s" if isinstance(copies, RealisticCopies) else ""
    )
    print(f"hub side: `addon-status hub`, one replica, its own process; kubesim over HTTP; "
          f"median of {args.runs} runs; --copy-size {copies.name}{played}")  # fmt: skip
    print(f"  {'clusters:':52}" + "".join(f"{n:>10}" for n in sizes))

    def row(label: str, key: str, form: str, of: Callable[[int], float] | None = None) -> None:
        cells = [form.format(of(n) if of else runs[n][key]) for n in sizes]
        print(f"  {label + ':':52}" + "".join(f"{c:>10}" for c in cells))

    row("hub copies' status on the wire (MB)", "status_mb", "{:.1f}")
    row("first full mirror (s)", "first", "{:.2f}")
    row("first mirror, clusters per second", "rate", "{:.0f}")
    row("first mirror: the hub side's CPU (s)", "first_cpu", "{:.2f}")
    row("burst of every copy (s)", "burst", "{:.2f}")
    row("burst, clusters per second", "burst_rate", "{:.0f}")
    row("burst: the hub side's CPU (s)", "burst_cpu", "{:.2f}")
    row("burst: the copies written to the hub in (s)", "burst_put", "{:.2f}")
    row("resync reads per cluster", "resync_reads", "{:.2f}")
    row("reads per cluster, whole run", "reads", "{:.2f}")
    row("writes per cluster, first mirror", "first_writes", "{:.2f}")
    row("writes per cluster, visible change", "burst_writes", "{:.2f}")
    row("writes per cluster, change not mirrored", "quiet_writes", "{:.2f}")
    row("writes per cluster, resync", "resync_writes", "{:.2f}")
    row("beside OCM: OCM's first writes per cluster", "ocm_first", "{:.2f}")
    row("beside OCM: hub side writes/cluster/hour", "ocm_side_writes", "{:.2f}")
    row("beside OCM: OCM's writes/cluster/hour", "ocm_writes", "{:.2f}")
    row("RSS once mirrored (MiB)", "rss", "{:.0f}")
    row("peak RSS once mirrored (MiB)", "peak_mirrored", "{:.0f}")
    row("RSS at the end (MiB)", "rss_end", "{:.0f}")
    row("peak RSS (MiB)", "peak", "{:.0f}")
    row("slowest first full mirror (s)", "", "{:.2f}", lambda n: max(f["first"] for f in each[n]))
    row("highest peak RSS (MiB)", "", "{:.0f}", lambda n: max(f["peak"] for f in each[n]))
    print("  one answer: the largest list page (500 items), decoded by the hub side's informer")
    for label, kind in (("hub copies", "copies"), ("ManagedClusterAddOns", "addons")):
        row(f"{label}: page on the wire (MB)", f"{kind}_page_mb", "{:.2f}")
        row(f"{label}: decode_page peak / wire", f"{kind}_decode_ratio", "{:.2f}")
        row(f"{label}: RestKube.list peak / wire", f"{kind}_call_ratio", "{:.2f}")
        row(f"{label}: first list, RSS before (MiB)", f"{kind}_list_before", "{:.0f}")
        row(f"{label}: first list, peak RSS (MiB)", f"{kind}_list_peak", "{:.0f}")
        row(f"{label}: first list, RSS after (MiB)", f"{kind}_list_after", "{:.0f}")
    print("  one watch event: the largest object of each kind, decoded and projected")
    row("hub copy: the line (KB)", "copy_event_kb", "{:.0f}")
    row("hub copy: peak / line", "copy_event_ratio", "{:.2f}")
    row("ManagedClusterAddOn: the line (KB)", "addon_event_kb", "{:.1f}")
    row("ManagedClusterAddOn: peak / line", "addon_event_ratio", "{:.2f}")
    goals(sizes, runs, each)


def goals(
    sizes: list[int], runs: dict[int, dict[str, float]], each: dict[int, list[dict[str, float]]]
) -> None:
    """Issue 32's goals, against the median and against the worst run."""
    print("  goals (issue 32): median; worst run")
    for n in sizes:
        first, peak, mirrored = GOALS.get(n, (None, None, None))
        for label, key, goal, worst in (
            ("every ManagedClusterAddOn mirrored (s)", "first", first, max),
            ("peak RSS (MiB)", "peak", peak, max),
            ("RSS once mirrored (MiB)", "rss", mirrored, max),
        ):
            if goal is None:
                continue
            median, bad = runs[n][key], worst(f[key] for f in each[n])
            verdict = "holds" if bad <= goal else ("holds (median)" if median <= goal else "MISSED")
            print(f"    {n} clusters, {label} <= {goal:g}: {median:.1f}; {bad:.1f}: {verdict}")
    for what, key in (
        ("a page of hub copies, decode_page", "copies_decode_ratio"),
        ("a page of hub copies, RestKube.list", "copies_call_ratio"),
        ("a page of ManagedClusterAddOns, decode_page", "addons_decode_ratio"),
        ("a page of ManagedClusterAddOns, RestKube.list", "addons_call_ratio"),
        ("a watch event of a hub copy", "copy_event_ratio"),
        ("a watch event of a ManagedClusterAddOn", "addon_event_ratio"),
    ):
        ratio = max(f[key] for found in each.values() for f in found)
        verdict = "holds" if ratio <= DECODE_GOAL else "MISSED"
        print(f"    {what}: peak <= {DECODE_GOAL:g}x the wire: {ratio:.2f}: {verdict}")


if __name__ == "__main__":
    main()
