"""`addon-status run` as a process, as the Deployment starts it: flags and `ADDON_STATUS_*`
variables, a spoke kubeconfig with a bearer token, leader election on, a hub kubeconfig. It
takes the Lease under its pod name, answers a report over HTTP once the spoke CR holds it,
copies the status to the hub, logs JSON without any token, and on SIGTERM releases the Lease
and exits 0."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller import ReportClient
from controller.kube.kubeconfig import kubeconfig_yaml
from kubesim import APIServer
from tests.support import eventually, true_type
from tests.system.conftest import (
    CLUSTER,
    HUB_TOKEN,
    SPOKE_NAMESPACE,
    WAIT,
    api_client,
    conditions,
    status_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]
SPOKE_TOKEN = "spoke-token-a"
LEASE = "addon-status-controller"
POD = "addon-status-7d9c-x2x4z"


def spoke_kubeconfig(server: APIServer, path: Path) -> Path:
    text = kubeconfig_yaml(server=server.url, token=SPOKE_TOKEN, name="spoke", user="controller")
    path.write_text(text, encoding="utf-8")
    return path


class LogReader:
    """The process's JSON log lines from stderr, read on a thread so that no wait can hang."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stderr is not None
        self.lines: list[str] = []
        self._queue: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._read, args=(process.stderr,), daemon=True)
        self._thread.start()

    def _read(self, stream: Any) -> None:
        for line in stream:
            self._queue.put(line)

    def wait_for(self, message: str) -> dict[str, Any]:
        deadline = time.monotonic() + 3 * WAIT
        while time.monotonic() < deadline:
            try:
                line = self._queue.get(timeout=0.1)
            except queue.Empty:
                continue
            self.lines.append(line)
            record: dict[str, Any] = json.loads(line) if line.startswith("{") else {}
            if record.get("message") == message:
                return record
        raise AssertionError(f"no log line {message!r}; got:\n{''.join(self.lines)}")

    def rest(self) -> str:
        self._thread.join(WAIT)
        while not self._queue.empty():
            self.lines.append(self._queue.get())
        return "".join(self.lines)


@pytest.fixture
def process(
    spoke_server: APIServer, hub_kubeconfig: Path, tmp_path: Path
) -> Iterator[subprocess.Popen[str]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ADDON_STATUS_"))}
    env |= {
        "POD_NAME": POD,
        "ADDON_STATUS_INSECURE": "true",  # the report API without authentication (loopback)
        "ADDON_STATUS_CLUSTER_NAME": CLUSTER,
        "ADDON_STATUS_HUB_KUBECONFIG": str(hub_kubeconfig),
    }
    loopback = ["--metrics-address", "127.0.0.1:0", "--probe-address", "127.0.0.1:0"]
    argv = [
        "--kubeconfig", str(spoke_kubeconfig(spoke_server, tmp_path / "spoke-kubeconfig")),
        "--report-address", "127.0.0.1:0", *loopback, "--leader-elect",
        "--lease-duration", "4s", "--renew-deadline", "2s", "--retry-period", "0.2s",
    ]  # fmt: skip
    started = subprocess.Popen(
        [sys.executable, "-m", "controller.cli", "run", *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    yield started
    if started.poll() is None:
        started.kill()
        started.wait(WAIT)


def lease_holder(server: APIServer) -> str | None:
    with api_client(server) as admin:
        lease = client.CoordinationV1Api(admin).read_namespaced_lease(LEASE, SPOKE_NAMESPACE)
    return lease.spec.holder_identity if lease.spec else None


def test_run_answers_reports_replicates_and_exits_0_on_sigterm(
    process: subprocess.Popen[str], spoke_server: APIServer, hub_server: APIServer
) -> None:
    logs = LogReader(process)
    url = logs.wait_for("report API listening")["url"]
    logs.wait_for("leading: machines rebuilt from the addon CR")
    assert lease_holder(spoke_server) == POD

    with ReportClient(url, deadline=WAIT) as reporter:
        answer = reporter.report(None, reason="UpdateSuccessful", message="deployed")
    assert answer["verdict"] == "accepted"
    spoke = status_of(spoke_server, SPOKE_NAMESPACE)
    assert true_type(spoke) == "Progressing"  # on the CR before the answer
    eventually(
        lambda: conditions(status_of(hub_server, CLUSTER)) == conditions(spoke),
        what="the hub copy",
        timeout=3 * WAIT,
    )

    process.send_signal(signal.SIGTERM)
    assert process.wait(3 * WAIT) == 0
    stderr = logs.rest()
    assert lease_holder(spoke_server) is None  # released on the way out
    assert SPOKE_TOKEN not in stderr and HUB_TOKEN not in stderr
    assert json.loads(stderr.splitlines()[-1])["message"] == "addon-status run stopped"
