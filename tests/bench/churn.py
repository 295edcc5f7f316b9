"""A large watched object that keeps changing, and reports answered meanwhile.

`addon-status run --config FILE` runs as its own process (as the Deployment starts it) against
an embedded spoke API server in this process. The configuration watches one Deployment whose
status holds `--items` conditions (~60 bytes each: 20,000 make ~1.2 MB, as large as an object
gets under etcd's 1.5 MiB) with one rule (`--rule multiMatch`, a JSONPath filter over every
condition; or `cel`, a field test). A writer replaces the Deployment's status `--rate` times a
second, flipping its Available condition, so every change changes the object's health; a
reporter sends a heartbeat every 100 ms through the report API and times each answer.

Prints, per rule: report answers p50/p99/max against the report API's 3 s submit timeout
(goal: every report answered 200, p99 well under the timeout), the status writes of the addon
CR, the object's changes written by the writer, the controller's peak RSS (VmHWM, against the
Deployment's 256Mi limit) and its CPU seconds per second of churn.

    .venv/bin/python tests/bench/churn.py [--items 20000] [--rate 2] [--seconds 20]
                                          [--rule multiMatch|cel|both]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from controller.kube.kubeconfig import kubeconfig_yaml  # noqa: E402
from controller.reporter.client import ReportClient, ReportUnavailable  # noqa: E402
from controller.spoke.addon import GROUP, KIND, PLURAL, VERSION  # noqa: E402
from controller.spoke.options import DEFAULT_NAME, DEFAULT_NAMESPACE  # noqa: E402
from kubesim import APIServer  # noqa: E402
from tests.bench.footprint import cpu_seconds, free_port, ready  # noqa: E402

CRD = ROOT / "manifests" / "base" / "crd.yaml"
MIB = 1024 * 1024
DEPLOYMENT = "big"
RULES = {
    "multiMatch": """
      multiMatch:
        healthy:
          matchConditions: [{type: Available, status: "True"}]
        unhealthy:
          matchFields:
            - key: 'status.conditions[?(@.type=="Available")].status'
              operator: In
              values: ["False"]
""",
    "cel": """
      cel:
        current: "has(self.status.readyReplicas) && self.status.readyReplicas > 0"
        failed: "has(self.status.readyReplicas) && self.status.readyReplicas == 0"
""",
}


def configuration(rule: str) -> str:
    return f"""resources:
  - name: big
    collector: metrics-collector
    object: {{apiVersion: apps/v1, kind: Deployment, name: {DEPLOYMENT}}}
    healthRule:{RULES[rule]}"""


def deployment_status(items: int, available: bool) -> dict[str, Any]:
    filler = [
        {"type": f"Filler{i:05d}", "status": "True", "reason": "Filler", "message": "x" * 16}
        for i in range(items)
    ]
    state = "True" if available else "False"
    return {
        "observedGeneration": 1,
        "readyReplicas": 1 if available else 0,
        "conditions": [{"type": "Available", "status": state, "reason": "Bench"}, *filler],
    }


def peak_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for {pid}")


def one_rule(rule: str, *, items: int, rate: float, seconds: float) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="churn-") as workdir,
        APIServer([CRD], namespaces=["default", DEFAULT_NAMESPACE], watch_history=20) as spoke,
    ):
        spoke.put_object(GROUP, VERSION, PLURAL, {
            "apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
            "metadata": {"name": DEFAULT_NAME, "namespace": DEFAULT_NAMESPACE},
            "spec": {"enableMetrics": True},
        })  # fmt: skip
        big = {
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": DEPLOYMENT, "namespace": DEFAULT_NAMESPACE, "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "big"}},
                     "template": {"metadata": {"labels": {"app": "big"}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": deployment_status(items, True),
        }  # fmt: skip
        spoke.put_object("apps", "v1", "deployments", big)
        kubeconfig, config = Path(workdir) / "kubeconfig", Path(workdir) / "config.yaml"
        kubeconfig.write_text(kubeconfig_yaml(server=spoke.url, token="t"), "utf-8")
        config.write_text(configuration(rule), "utf-8")
        probes, reports = free_port(), free_port()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ADDON_STATUS_"))}
        argv = [
            "run", "--kubeconfig", str(kubeconfig), "--config", str(config), "--insecure",
            "--collectors", "metrics-collector", "--report-address", f"127.0.0.1:{reports}",
            "--metrics-address", f"127.0.0.1:{free_port()}",
            "--probe-address", f"127.0.0.1:{probes}", "--log-level", "warning",
        ]  # fmt: skip
        process = subprocess.Popen(
            [sys.executable, "-m", "controller.cli", *argv],
            cwd=ROOT, env=env | {"POD_NAME": "churn"},
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            started = time.monotonic()
            while not ready(f"http://127.0.0.1:{probes}/readyz"):
                if process.poll() is not None:
                    raise SystemExit(f"FAILED: run exited: {process.stderr.read()}")  # type: ignore[union-attr]
                if time.monotonic() - started > 60:
                    raise SystemExit("FAILED: not ready within 60 s")
                time.sleep(0.05)
            return _churn(spoke, big, process.pid, f"http://127.0.0.1:{reports}",
                          items=items, rate=rate, seconds=seconds)  # fmt: skip
        finally:
            process.terminate()
            process.wait(30)


def _churn(
    spoke: APIServer,
    big: dict[str, Any],
    pid: int,
    url: str,
    *,
    items: int,
    rate: float,
    seconds: float,
) -> dict[str, Any]:
    stop = threading.Event()
    changes = 0
    statuses = [deployment_status(items, False), deployment_status(items, True)]

    def write() -> None:
        nonlocal changes
        while not stop.wait(1 / rate):
            big["status"] = statuses[changes % 2]
            spoke.put_object("apps", "v1", "deployments", big)
            changes += 1

    latencies: list[float] = []
    failed = 0
    with ReportClient(url, deadline=10, retries=0) as reporter:
        reporter.report(reason="UpdateSuccessful", message="deployed")
        reporter.report("metrics-collector", reason="ForwardSuccessful")
        writes_before = spoke.count_requests(resource=PLURAL, subresource="status")
        writer = threading.Thread(target=write, daemon=True)
        cpu_before, began = cpu_seconds(pid), time.monotonic()
        writer.start()
        while time.monotonic() - began < seconds:
            sent = time.perf_counter()
            try:
                reporter.report("metrics-collector", reason="ForwardSuccessful")
                latencies.append(time.perf_counter() - sent)
            except ReportUnavailable:
                failed += 1
            time.sleep(0.1)
        stop.set()
        writer.join()
        cpu = cpu_seconds(pid) - cpu_before
        elapsed = time.monotonic() - began
    latencies.sort()
    return {
        "p50": statistics.median(latencies) * 1000,
        "p99": latencies[int(0.99 * (len(latencies) - 1))] * 1000,
        "max": latencies[-1] * 1000,
        "answered": len(latencies),
        "failed": failed,
        "changes": changes,
        "status_writes": spoke.count_requests(resource=PLURAL, subresource="status")
        - writes_before,
        "rss": peak_rss(pid) / MIB,
        "cpu": cpu / elapsed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--rate", type=float, default=2.0, help="object changes per second")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rule", choices=["multiMatch", "cel", "both"], default="both")
    args = parser.parse_args()
    rules = ["multiMatch", "cel"] if args.rule == "both" else [args.rule]
    size = len(json.dumps(deployment_status(args.items, True))) / MIB
    print(f"a Deployment with {args.items} conditions (~{size:.1f} MiB) changing "
          f"{args.rate:g}/s for {args.seconds:g} s; a heartbeat every 100 ms")  # fmt: skip
    header = ("rule", "p50 ms", "p99 ms", "max ms", "answered", "failed", "changes",
              "CR writes", "peak RSS MiB", "CPU s/s")  # fmt: skip
    print("".join(f"{h:>13}" for h in header))
    for rule in rules:
        r = one_rule(rule, items=args.items, rate=args.rate, seconds=args.seconds)
        cells = [rule, f"{r['p50']:.1f}", f"{r['p99']:.1f}", f"{r['max']:.1f}", r["answered"],
                 r["failed"], r["changes"], r["status_writes"], f"{r['rss']:.0f}",
                 f"{r['cpu']:.2f}"]  # fmt: skip
        print("".join(f"{c:>13}" for c in cells))
        if r["failed"]:
            print(f"FAILED: {r['failed']} reports got no verdict")
            raise SystemExit(1)


if __name__ == "__main__":
    main()
