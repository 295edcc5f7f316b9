"""What one idle `addon-status run` costs a cluster: start-up to ready, resident memory, CPU,
and how often each of its threads wakes; and the wake-ups of an idle `addon-status hub`.

The controller runs as its own process, as the Deployment starts it (`--leader-elect`, a hub
kubeconfig, default timings), against two embedded API servers in this process (a spoke holding
the addon CR and the Lease, a hub holding the copy); only the controller's process is measured.
The report API runs without authentication (`--insecure`), the one difference from a pod.

- start-up to ready: from spawning the process to the first 200 from `/readyz`, and the CPU
  time the process spent until then (which a busy machine does not stretch);
- RSS once idle (after `--settle` seconds), and what holds it: the RSS of a separate process
  importing what `run` imports, layer by layer, and the rest (loaded or allocated after start);
- CPU seconds per idle hour: user + system time over `--idle` seconds, extrapolated, and the
  requests the two API servers received meanwhile (what the idle CPU is spent on);
- wake-ups per second of each thread, by the thread's name (each part names its OS thread):
  the voluntary context switches in `/proc/<pid>/task/<tid>/status` over the same idle seconds
  (a thread that sleeps until something happens switches once per wake-up);
- the same wake-ups for an idle `addon-status hub` (`--leader-elect`) over a hub of
  `--clusters` clusters, each with its copy and its `ManagedClusterAddOn`, once mirrored.

    .venv/bin/python tests/bench/footprint.py [--runs 3] [--idle 60] [--settle 5] [--clusters 10]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from controller.kube.kubeconfig import kubeconfig_yaml
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION
from controller.spoke.options import DEFAULT_NAME, DEFAULT_NAMESPACE
from kubesim import APIServer

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
CRD = ROOT / "manifests" / "base" / "crd.yaml"
CLUSTER = "cluster1"
TICKS = os.sysconf("SC_CLK_TCK")
MIB = 1024 * 1024


@contextmanager
def servers() -> Iterator[tuple[APIServer, APIServer]]:
    """A spoke and a hub API server, each holding the addon CR (its copy on the hub)."""
    with (
        APIServer([CRD], namespaces=["default", DEFAULT_NAMESPACE]) as spoke,
        APIServer([CRD], namespaces=["default", CLUSTER]) as hub,
    ):
        for server, namespace in ((spoke, DEFAULT_NAMESPACE), (hub, CLUSTER)):
            server.put_object(GROUP, VERSION, PLURAL, {
                "apiVersion": f"{GROUP}/{VERSION}",
                "kind": KIND,
                "metadata": {"name": DEFAULT_NAME, "namespace": namespace},
                "spec": {"enableMetrics": True, "interval": 300},
            })  # fmt: skip
        yield spoke, hub


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def rss_bytes(pid: int) -> int:
    """VmRSS of a running process."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def thread_switches(pid: int) -> dict[int, tuple[str, int]]:
    """Each thread of `pid`: its name and its voluntary context switches so far."""
    found: dict[int, tuple[str, int]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = "MainThread" if int(task.name) == pid else (task / "comm").read_text().strip()
            status = (task / "status").read_text()
        except OSError:  # it ended meanwhile
            continue
        for line in status.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                found[int(task.name)] = (name, int(line.split()[1]))
    return found


def wakeups(pid: int, seconds: float) -> dict[str, tuple[int, float]]:
    """Sleep `seconds`; then, by thread name, how many threads and their wake-ups per second
    (a thread that ended meanwhile is not counted)."""
    before = thread_switches(pid)
    time.sleep(seconds)
    after = thread_switches(pid)
    by_name: dict[str, tuple[int, float]] = {}
    for tid, (name, switches) in after.items():
        count, rate = by_name.get(name, (0, 0.0))
        by_name[name] = (count + 1, rate + (switches - before.get(tid, (name, 0))[1]) / seconds)
    return by_name


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as answer:
            return int(answer.status) == 200
    except (urllib.error.URLError, OSError):
        return False


# What `run` imports, in layers; each layer's RSS is measured after the ones above it.
IMPORT_LAYERS = [
    ("yaml", "import yaml"),
    ("pydantic (and a first model)", "import pydantic\nclass _M(pydantic.BaseModel): x: int"),
    ("statemachines, transitions", "import statemachines.core, transitions"),
    ("urllib3, prometheus_client", "import urllib3, prometheus_client"),
    ("the rest of run's modules", "import controller.spoke.app"),
]
LAYERED = """
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
print(rss())
{}
"""


def import_layers() -> list[tuple[str, int]]:
    """(layer, RSS in bytes once it is imported too), starting with the bare interpreter."""
    code = LAYERED.format("\n".join(f"{step}\nprint(rss())" for _, step in IMPORT_LAYERS))
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    sizes = [int(line) for line in done.stdout.split()]
    return list(zip(["the interpreter", *(name for name, _ in IMPORT_LAYERS)], sizes, strict=True))


def one_run(workdir: Path, *, idle: float, settle: float) -> dict[str, float]:
    with servers() as (spoke, hub):
        spoke_config, hub_config = workdir / "spoke-kubeconfig", workdir / "hub-kubeconfig"
        spoke_config.write_text(kubeconfig_yaml(server=spoke.url, token="spoke"), "utf-8")
        hub_config.write_text(kubeconfig_yaml(server=hub.url, token="hub"), "utf-8")
        probes = free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ADDON_STATUS_"))}
        argv = [
            "run", "--leader-elect", "--kubeconfig", str(spoke_config),
            "--hub-kubeconfig", str(hub_config), "--cluster-name", CLUSTER, "--insecure",
            "--report-address", f"127.0.0.1:{free_port()}",
            "--metrics-address", f"127.0.0.1:{free_port()}",
            "--probe-address", f"127.0.0.1:{probes}",
        ]  # fmt: skip
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", *argv],
            cwd=ROOT,
            env=env | {"POD_NAME": "footprint"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            while not ready(f"http://127.0.0.1:{probes}/readyz"):
                if process.poll() is not None:
                    raise SystemExit(f"FAILED: addon-status run exited with {process.returncode}")
                if time.perf_counter() - started > 60:
                    raise SystemExit("FAILED: not ready within 60 s")
                time.sleep(0.01)
            to_ready, cpu_to_ready = time.perf_counter() - started, cpu_seconds(process.pid)
            time.sleep(settle)
            rss, cpu_before = rss_bytes(process.pid), cpu_seconds(process.pid)
            calls_before = len(spoke.audit) + len(hub.audit)
            threads = wakeups(process.pid, idle)
            cpu = cpu_seconds(process.pid) - cpu_before
            calls = len(spoke.audit) + len(hub.audit) - calls_before
            if process.poll() is not None:
                raise SystemExit("FAILED: addon-status run stopped while idle")
            per_hour = 3600 / idle
            return {
                "ready": to_ready,
                "cpu_to_ready": cpu_to_ready,
                "rss": rss,
                "cpu_per_hour": cpu * per_hour,
                "calls_per_hour": calls * per_hour,
                "threads": threads,
            }
        finally:
            process.terminate()
            process.wait(30)


def hub_run(
    workdir: Path, *, clusters: int, idle: float, settle: float
) -> tuple[float, dict[str, tuple[int, float]]]:
    """An idle `addon-status hub` once it mirrored every cluster: CPU s per hour, and its
    threads' wake-ups."""
    from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
    from controller.hub.mirror import cluster_namespace, managed_cluster_addon
    from tests.hub.hubside import ADDON, COPY, hub_server, seed

    with hub_server() as hub:
        for i in range(clusters):
            cluster = f"cluster{i:05d}"
            hub.server.put_object("", "v1", "namespaces", cluster_namespace(cluster))
            hub.server.put_object(
                MCA.group, MCA.version, MCA.plural, managed_cluster_addon(cluster, ADDON)
            )
            hub.server.put_object(GROUP, VERSION, PLURAL, {
                "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
                "metadata": {"name": COPY, "namespace": cluster},
                "spec": {"enableMetrics": True}, "status": {"conditions": seed()},
            })  # fmt: skip
        kubeconfig = workdir / "hub-side-kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.server.url, token="hub-a"), "utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ADDON_STATUS_"))}
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", "hub", "--leader-elect",
             "--kubeconfig", str(kubeconfig), "--metrics-address", f"127.0.0.1:{free_port()}",
             "--probe-address", f"127.0.0.1:{free_port()}", "--log-level", "warning"],
            # as the Deployment sets them: its Lease lives where its Role lets it lease
            cwd=ROOT, env=env | {"POD_NAME": "footprint-hub",
                                 "POD_NAMESPACE": hub.identity.namespace if hub.identity else ""},
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            started = time.perf_counter()
            while hub.writes() < clusters:
                if process.poll() is not None:
                    raise SystemExit(f"FAILED: addon-status hub exited with {process.returncode}")
                if time.perf_counter() - started > 60:
                    raise SystemExit("FAILED: the hub side did not mirror within 60 s")
                time.sleep(0.05)
            time.sleep(settle)
            cpu_before = cpu_seconds(process.pid)
            threads = wakeups(process.pid, idle)
            cpu = cpu_seconds(process.pid) - cpu_before
            if process.poll() is not None:
                raise SystemExit("FAILED: addon-status hub stopped while idle")
            return cpu * 3600 / idle, threads
        finally:
            process.terminate()
            process.wait(30)


def thread_rows(title: str, what: str, runs: list[dict[str, tuple[int, float]]]) -> None:
    """Wake-ups per second by thread name (how many threads of that name), median first."""
    print(title)
    for name in sorted({name for run in runs for name in run}):
        rates = [run.get(name, (0, 0.0))[1] for run in runs]
        count = max(run.get(name, (0, 0.0))[0] for run in runs)
        label = f"  {name} (x{count})" if count > 1 else f"  {name}"
        cells = "".join(f"{v:>10.2f}" for v in [statistics.median(rates), *rates])
        print(f"{label + ':':<46}{cells}")
    totals = [sum(rate for _, rate in run.values()) for run in runs]
    cells = "".join(f"{v:>10.2f}" for v in [statistics.median(totals), *totals])
    print(f"{f'  every thread of {what}:':<46}{cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="processes started (default 3)")
    parser.add_argument("--idle", type=float, default=60.0, help="idle seconds measured per run")
    parser.add_argument("--settle", type=float, default=5.0, help="seconds before measuring")
    parser.add_argument("--clusters", type=int, default=10, help="the idle hub side's clusters")
    args = parser.parse_args()

    runs: list[dict[str, Any]] = []
    hubs: list[tuple[float, dict[str, tuple[int, float]]]] = []
    with tempfile.TemporaryDirectory(prefix="footprint-") as workdir:
        for _ in range(args.runs):
            runs.append(one_run(Path(workdir), idle=args.idle, settle=args.settle))
            hubs.append(
                hub_run(Path(workdir), clusters=args.clusters, idle=args.idle, settle=args.settle)
            )
    layers = import_layers()

    def row(label: str, values: list[float], form: str) -> None:
        cells = "".join(f"{form.format(v):>10}" for v in [statistics.median(values), *values])
        print(f"{label + ':':<46}{cells}")

    print(f"addon-status run, idle ({args.runs} runs; median, then each run)")
    row("start-up to ready, s", [r["ready"] for r in runs], "{:.2f}")
    row("CPU s spent until ready", [r["cpu_to_ready"] for r in runs], "{:.2f}")
    row("RSS when idle, MiB", [r["rss"] / MIB for r in runs], "{:.1f}")
    row(f"CPU s per idle hour (over {args.idle:g} s)", [r["cpu_per_hour"] for r in runs], "{:.1f}")
    row("API requests per idle hour", [r["calls_per_hour"] for r in runs], "{:.0f}")
    print("RSS as run's imports add up, MiB (one process; the layer's share, then the total)")
    previous = 0
    for name, size in layers:
        print(f"  {name + ':':<44}{(size - previous) / MIB:>10.1f}{size / MIB:>10.1f}")
        previous = size
    after_start = statistics.median(r["rss"] for r in runs) - previous
    print(f"  {'loaded or allocated after the start:':<44}{after_start / MIB:>10.1f}")
    thread_rows(
        f"wake-ups per second of each thread of the idle run, over {args.idle:g} s",
        "run",
        [r["threads"] for r in runs],
    )
    print(f"addon-status hub, idle over {args.clusters} clusters, once mirrored")
    row(f"hub: CPU s per idle hour (over {args.idle:g} s)", [cpu for cpu, _ in hubs], "{:.1f}")
    thread_rows(
        f"wake-ups per second of each thread of the idle hub, over {args.idle:g} s",
        "hub",
        [threads for _, threads in hubs],
    )


if __name__ == "__main__":
    main()
