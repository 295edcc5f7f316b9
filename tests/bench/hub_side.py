"""The hub side on a fleet: `addon-status hub` as its own process (one replica, the real client
over HTTP), against an embedded hub in this process holding N cluster namespaces, each with a
hub copy and a ManagedClusterAddOn (kubesim serving the upstream CRD).

For each N (default 1,000, 2,000, 5,000 and 10,000, so the growth is visible), the median of
`--runs` runs, each on a fresh server and process:

- first full mirror (s): from starting the process to every ManagedClusterAddOn written;
- burst (s): every hub copy changes at once (a visible change: a reason); until all are
  mirrored again, and the rate against the first mirror's;
- writes per cluster of each phase (goal: exactly 1.00 for the first mirror and a visible
  change, 0.00 for a change of a collector condition only and for a resync);
- resync reads per cluster: GETs of ManagedClusterAddOns while one resync runs (goal 0: both
  kinds are kept by watches), and reads per cluster over the whole run;
- the process's RSS once mirrored and its peak (VmHWM; goal at most 200 MiB at 10,000);
- beside OCM's own writers (controller/demo/ocm_writers.py: the addon manager's `Progressing`
  on every event, the health check's `Available` resynced every 30 s, here at `--ocm-scale`
  times real time), once they have written every ManagedClusterAddOn: the hub side's writes per
  cluster per simulated hour at steady state (goal 0), and OCM's.

Simulated: the spokes (each hub copy is written straight to the server's storage, as
replication would through the API).

    .venv/bin/python tests/bench/hub_side.py [--clusters 1000,2000,5000,10000] [--resync 20]
                                             [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.demo.ocm_writers import OcmWriters  # noqa: E402
from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA  # noqa: E402
from controller.hub.mirror import cluster_namespace, managed_cluster_addon  # noqa: E402
from controller.kube.connection import Connection  # noqa: E402
from controller.kube.kubeconfig import kubeconfig_yaml  # noqa: E402
from controller.kube.rest import RestKube  # noqa: E402
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION  # noqa: E402
from tests.bench.footprint import free_port, ready  # noqa: E402
from tests.hub.hubside import ADDON, COPY, Hub, hub_server, seed  # noqa: E402

MIB = 1024 * 1024


def _put_copy(hub: Hub, cluster: str, conditions: list[dict[str, Any]]) -> None:
    hub.server.put_object(GROUP, VERSION, PLURAL, {
        "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
        "metadata": {"name": COPY, "namespace": cluster},
        "spec": {"enableMetrics": True}, "status": {"conditions": conditions},
    })  # fmt: skip


def _reads(hub: Hub) -> int:
    return hub.server.count_requests(verbs=("get",), resource=MCA.plural)


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} for {pid}")


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
            while ocm.writes != last or time.perf_counter() - settled < 3.0:
                if ocm.writes != last:
                    last, settled = ocm.writes, time.perf_counter()
                time.sleep(0.5)  # until OCM has written every ManagedClusterAddOn once
            side, theirs = hub.writes(user="hub-side-a"), ocm.writes
            time.sleep(window)
            hours = window * scale / 3600
            return {"ocm_side_writes": (hub.writes(user="hub-side-a") - side) / count / hours,
                    "ocm_writes": (ocm.writes - theirs) / count / hours}  # fmt: skip
        finally:
            ocm.stop()


def one_size(
    count: int, resync: float, workdir: Path, ocm: tuple[float, float]
) -> dict[str, float]:
    clusters = [f"cluster{i:05d}" for i in range(count)]
    timeout = 120 + count / 50
    with hub_server() as hub:
        for cluster in clusters:
            hub.server.put_object("", "v1", "namespaces", cluster_namespace(cluster))
            hub.server.put_object(MCA.group, MCA.version, MCA.plural,
                                  managed_cluster_addon(cluster, ADDON))  # fmt: skip
            _put_copy(hub, cluster, seed())
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
            first = time.perf_counter() - started
            figures: dict[str, float] = {"first": first, "first_writes": hub.writes() / count}
            figures["rss"] = _status(process.pid, "VmRSS") / MIB
            if not ready(f"http://127.0.0.1:{probes}/readyz"):
                raise SystemExit("FAILED: the hub side is not ready once mirrored")
            # a burst: every copy changes at once
            before, burst_started = hub.writes(), time.perf_counter()
            for cluster in clusters:
                _put_copy(hub, cluster, seed(reason="ForwardFailed"))
            _wait_writes(hub, before + count, timeout)
            figures["burst"] = time.perf_counter() - burst_started
            figures["burst_writes"] = (hub.writes() - before) / count
            # a collector condition only, then one visible change that follows them all through
            # the watch: once it is mirrored, everything before it was seen
            quiet = seed(reason="ForwardFailed")
            quiet[-1] = {**quiet[-1], "reason": "ForwardFailure"}
            before = hub.writes()
            for cluster in clusters:
                _put_copy(hub, cluster, quiet)
            _put_copy(hub, clusters[-1], seed(reason="UpdateFailed"))
            _wait_writes(hub, before + 1, timeout)
            figures["quiet_writes"] = (hub.writes() - before - 1) / count
            # one resync: it reads nothing and writes nothing
            before, reads = hub.writes(), _reads(hub)
            time.sleep(resync + 2.0)
            figures["resync_writes"] = (hub.writes() - before) / count
            figures["resync_reads"] = (_reads(hub) - reads) / count
            figures["reads"] = _reads(hub) / count
            figures |= _beside_ocm(hub, count, *ocm)
            figures["peak"] = _status(process.pid, "VmHWM") / MIB
        finally:
            process.terminate()
            process.wait(30)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--clusters",
        default="1000,2000,5000,10000",
        help="comma-separated sizes (default 1000,2000,5000,10000)",
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
    args = parser.parse_args()
    sizes = [int(n) for n in args.clusters.split(",")]
    ocm = (args.ocm_scale, args.ocm_window)
    with tempfile.TemporaryDirectory(prefix="hub-side-") as workdir:
        each = {
            n: [one_size(n, args.resync, Path(workdir), ocm) for _ in range(args.runs)]
            for n in sizes
        }
    for n, found in each.items():
        for figures in found:
            figures["rate"], figures["burst_rate"] = n / figures["first"], n / figures["burst"]
    runs = {
        n: {key: statistics.median(f[key] for f in found) for key in found[0]}
        for n, found in each.items()
    }
    print(f"hub side: `addon-status hub`, one replica, its own process; kubesim over HTTP; "
          f"median of {args.runs} runs")  # fmt: skip
    print(f"  {'clusters:':42}" + "".join(f"{n:>10}" for n in sizes))

    def row(label: str, key: str, form: str) -> None:
        print(f"  {label + ':':42}" + "".join(f"{form.format(runs[n][key]):>10}" for n in sizes))

    row("first full mirror (s)", "first", "{:.2f}")
    row("first mirror, clusters per second", "rate", "{:.0f}")
    row("burst of every copy (s)", "burst", "{:.2f}")
    row("burst, clusters per second", "burst_rate", "{:.0f}")
    row("resync reads per cluster", "resync_reads", "{:.2f}")
    row("reads per cluster, whole run", "reads", "{:.2f}")
    row("writes per cluster, first mirror", "first_writes", "{:.2f}")
    row("writes per cluster, visible change", "burst_writes", "{:.2f}")
    row("writes per cluster, collector-only change", "quiet_writes", "{:.2f}")
    row("writes per cluster, resync", "resync_writes", "{:.2f}")
    row("beside OCM: hub side writes/cluster/hour", "ocm_side_writes", "{:.2f}")
    row("beside OCM: OCM's writes/cluster/hour", "ocm_writes", "{:.2f}")
    row("RSS once mirrored (MiB)", "rss", "{:.0f}")
    row("peak RSS (MiB)", "peak", "{:.0f}")
    slowest = {n: max(f["first"] for f in found) for n, found in each.items()}
    print(
        f"  {'slowest first full mirror (s):':42}" + "".join(f"{slowest[n]:>10.2f}" for n in sizes)
    )


if __name__ == "__main__":
    main()
