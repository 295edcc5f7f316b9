"""End to end: a watched object's change, through the health watch and the core, to the spoke
status written.

The real parts, assembled by `controller.spoke.app.Replica` as `addon-status run --config FILE`
assembles them: a Deployment on an embedded API server, changed with the `kubernetes` client
(its status subresource, as the Deployment controller writes it); the health watch (the
dynamic client, by name) hands each event to the reconcile worker; the core judges it
(`singleConditionType: Available`, `for: 0s`) and the status writer writes the addon CR. The
Deployment alternates between Available True and False, so every change changes the status;
then it gets as many changes that keep the result (a label), which must write nothing.

Prints, for each of `--runs` runs and their median: p50/p99 from the Deployment's status write
sent (the watch may deliver it before its answer arrives) to the addon's status written (the
worker's `on_status_written` hook; goal p99 under 10 ms), spoke status writes per change of the
result (goal 1) and for changes that keep it (goal 0).

    .venv/bin/python tests/bench/object_changes.py [--changes 200] [--runs 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from kubernetes import client  # noqa: E402

from controller.kube.connection import Connection  # noqa: E402
from controller.spoke.addon import GROUP, PLURAL, VERSION  # noqa: E402
from controller.spoke.app import Replica  # noqa: E402
from controller.spoke.options import Address, RunOptions  # noqa: E402
from kubesim import APIServer  # noqa: E402
from statemachines import Config  # noqa: E402
from statemachines.health import load_resources  # noqa: E402

CRD = ROOT / "manifests" / "base" / "crd.yaml"
NAMESPACE, NAME, DEPLOYMENT = "addons", "observability-addon", "metrics-collector"
LOOPBACK = Address(host="127.0.0.1", port=0)
LABELS = {"app": DEPLOYMENT}
SPEC = {
    "selector": {"matchLabels": LABELS},
    "template": {
        "metadata": {"labels": LABELS},
        "spec": {"containers": [{"name": "c", "image": "collector:1"}]},
    },
}


class Written:
    """The worker's hook: when each status with a given health of the resource was written."""

    def __init__(self) -> None:
        self.at: list[tuple[float, str]] = []
        self._lock = threading.Condition()

    def __call__(self, status: dict[str, Any]) -> None:
        [entry] = status.get("resources") or [{"conditions": []}]
        health = entry["conditions"][0]["status"] if entry["conditions"] else ""
        with self._lock:
            self.at.append((time.perf_counter(), health))
            self._lock.notify_all()

    def wait_for(self, health: str, after: float, timeout: float = 10.0) -> float:
        deadline = time.monotonic() + timeout
        with self._lock:
            while True:
                for moment, seen in self.at:
                    if seen == health and moment >= after:
                        return moment
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"the status with {health} was not written")
                self._lock.wait(left)


def percentile(values: list[float], q: int) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def one_run(changes: int) -> tuple[list[float], float, float]:
    resources = load_resources(
        [
            {
                "name": "collector",
                "collector": "metrics-collector",
                "object": {"apiVersion": "apps/v1", "kind": "Deployment", "name": DEPLOYMENT},
                "healthRule": {"singleConditionType": "Available"},
            }
        ],
        namespace=NAMESPACE,
        collectors=["metrics-collector", "uwl-metrics-collector"],
    )
    options = RunOptions(
        addon_namespace=NAMESPACE,
        addon_name=NAME,
        metrics_address=LOOPBACK,
        probe_address=LOOPBACK,
        report_address="127.0.0.1:0",
        insecure=True,
    )
    with APIServer([CRD], namespaces=["default", NAMESPACE], watch_history=10_000) as server:
        server.put_object(
            GROUP, VERSION, PLURAL, {"metadata": {"name": NAME, "namespace": NAMESPACE}, "spec": {}}
        )
        with (
            client.ApiClient(client.Configuration(host=server.url)) as api,
            Connection(server.url) as connection,
        ):
            apps = client.AppsV1Api(api)
            apps.create_namespaced_deployment(
                NAMESPACE, {"metadata": {"name": DEPLOYMENT}, "spec": SPEC}
            )
            written = Written()
            config = Config.create(resources=resources)
            with Replica(options, api_client=connection, config=config) as replica:
                replica.worker.on_status_written.append(written)
                while not replica.worker.objects_seen:  # the watch listed the Deployment
                    time.sleep(0.005)
                replica.worker.tick().result(timeout=10)
                before = _status_writes(server)
                latencies = []
                for index in range(changes):
                    health = "True" if index % 2 == 0 else "False"
                    body = {
                        "metadata": {"name": DEPLOYMENT},
                        "spec": SPEC,
                        "status": {"conditions": [{"type": "Available", "status": health}]},
                    }
                    # From the write sent: the watch may deliver it before the answer arrives.
                    sent = time.perf_counter()
                    apps.replace_namespaced_deployment_status(DEPLOYMENT, NAMESPACE, body)
                    latencies.append(written.wait_for(health, sent) - sent)
                replica.worker.tick().result(timeout=10)
                writes = _status_writes(server) - before
                for index in range(changes):
                    apps.patch_namespaced_deployment(
                        DEPLOYMENT, NAMESPACE, {"metadata": {"labels": {"n": str(index)}}}
                    )
                while int(replica.worker.objects_seen.get("collector") or 0) < int(
                    server.resource_version
                ):
                    time.sleep(0.005)
                replica.worker.tick().result(timeout=10)
                kept = _status_writes(server) - before - writes
    return latencies, writes / changes, kept / changes


def _status_writes(server: APIServer) -> int:
    return server.count_requests(verbs=("update",), resource=PLURAL, subresource="status")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    runs = [one_run(args.changes) for _ in range(args.runs)]
    rows = {
        "p50 ms, object change to spoke status written": [
            1000 * percentile(r[0], 50) for r in runs
        ],
        "p99 ms, object change to spoke status written (goal < 10)": [
            1000 * percentile(r[0], 99) for r in runs
        ],
        "spoke writes per change of the result (goal 1)": [r[1] for r in runs],
        "spoke writes per change keeping the result (goal 0)": [r[2] for r in runs],
    }
    print(f"{args.changes} object changes per run; runs, then their median")
    for label, values in rows.items():
        cells = " ".join(f"{v:8.2f}" for v in [*values, statistics.median(values)])
        print(f"  {label}: {cells}")


if __name__ == "__main__":
    main()
