"""The rules in a real Prometheus (Debian's server, a temporary configuration, loopback only):
it scrapes a running spoke controller (the demo's assembly on embedded API servers) and a
running hub side (on an embedded hub), evaluates monitoring/rules every second, and its HTTP API
shows the alert each Degraded addon deserves, pending for its `for:` with the labels that
locate it, and no alert once both recover; every query of the dashboards runs there."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
import yaml

from controller.demo.command import DEFAULT_SCENARIO, running
from controller.demo.scenario_file import EPOCH, read
from controller.demo.scenario_run import SteppedClock
from controller.flags.options import Address
from controller.hub.app import HubReplica
from controller.hub.options import HubOptions
from tests.hub.hubside import hub_server, seed
from tests.monitoring.prometheus import tools
from tests.monitoring.prometheusrules import RULES
from tests.monitoring.test_dashboards import FILES, queries
from tests.support import connection, eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]
FLEET_DASHBOARD = next(path for path in FILES if path.name == "addon-status-fleet.json")
LOOPBACK = Address(host="127.0.0.1", port=0)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def prometheus_at(tmp_path: Path) -> Iterator[Any]:
    """start(targets) -> the server's URL; `targets`: job -> (host:port, labels)."""
    started: list[subprocess.Popen[bytes]] = []

    def start(targets: dict[str, tuple[str, dict[str, str]]]) -> str:
        port = _free_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(p) for p in sorted(RULES.glob("*.rules.yaml"))],
            "scrape_configs": [
                {"job_name": job, "static_configs": [{"targets": [target], "labels": labels}]}
                for job, (target, labels) in targets.items()
            ],
        }
        path = tmp_path / "prometheus.yml"
        path.write_text(yaml.safe_dump(config), encoding="utf-8")
        log = (tmp_path / "prometheus.log").open("wb")
        started.append(subprocess.Popen(
            [str(tools().prometheus), f"--config.file={path}",
             f"--storage.tsdb.path={tmp_path / 'data'}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=log,
        ))  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        eventually(lambda: _get(url, "/-/ready") is not None, "Prometheus ready", timeout=30)
        return url

    yield start
    for process in started:
        process.terminate()
        process.wait(10)


def _get(url: str, path: str) -> Any:
    try:
        with urllib.request.urlopen(url + path, timeout=5) as answer:
            body = answer.read()
    except OSError:
        return None
    return json.loads(body) if body.startswith(b"{") else body


def _alerts(url: str) -> dict[str, dict[str, Any]]:
    """The active alerts by name (`state`: pending or firing, `labels`)."""
    found = _get(url, "/api/v1/alerts") or {"data": {"alerts": []}}
    return {a["labels"]["alertname"]: a for a in found["data"]["alerts"]}


def _answered(url: str, expressions: list[str]) -> bool:
    """Every query succeeds, and most have a result (a rate needs two scrapes first)."""
    answers = [_get(url, f"/api/v1/query?query={quote(q)}") for q in expressions]
    assert all(a and a["status"] == "success" for a in answers), answers
    return sum(bool(a["data"]["result"]) for a in answers) > len(answers) / 2


def _value(url: str, expression: str) -> float | None:
    """The query's one value now; None when it has none."""
    answer = _get(url, f"/api/v1/query?query={quote(expression)}")
    result = answer["data"]["result"] if answer else []
    return float(result[0]["value"][1]) if len(result) == 1 else None


def test_prometheus_alerts_while_degraded_and_resolves_after_recovery(prometheus_at: Any) -> None:
    hour_ago = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    with hub_server() as hub, running(read(DEFAULT_SCENARIO), SteppedClock(EPOCH)) as spoke:
        hub.cluster("c1")
        hub.set_copy("c1", seed("Degraded", "ForwardFailure", at=hour_ago))
        options = HubOptions(metrics_address=LOOPBACK, probe_address=LOOPBACK, request_timeout=5.0)
        with (
            connection(hub.server, "hub-a") as client_,
            HubReplica(options, client_, identity="hub-a") as side,
        ):
            assert side.metrics_server is not None
            spoke.system.report(reason="UpdateFailure", message="rollout failed")
            spoke_target = spoke.controller.metrics_url.removeprefix("http://")
            url = prometheus_at({
                "addon-status": (spoke_target, {"namespace": "spoke", "pod": "spoke-a"}),
                "addon-status-hub": (f"127.0.0.1:{side.metrics_server.port}",
                                     {"namespace": "hub", "pod": "hub-a"}),
            })  # fmt: skip

            def degraded_alerts() -> bool:
                alerts = _alerts(url)
                return {"AddonStatusClusterDegraded", "AddonStatusAddonDegraded"} <= set(alerts)

            eventually(degraded_alerts, "both Degraded alerts", timeout=60)
            alerts = _alerts(url)
            cluster = alerts["AddonStatusClusterDegraded"]
            assert cluster["state"] in {"pending", "firing"}
            assert (cluster["labels"]["cluster"], cluster["labels"]["reason"]) == (
                "c1", "ForwardFailure",
            )  # fmt: skip
            assert "Cluster c1 has been Degraded" in cluster["annotations"]["summary"]
            assert alerts["AddonStatusAddonDegraded"]["labels"]["namespace"] == "spoke"
            assert "AddonStatusFleetDegraded" in alerts  # one cluster of one: the whole fleet
            for path in FILES:  # the dashboards' queries run, and most soon have something
                eventually(lambda p=path: _answered(url, queries(p)), path.name, timeout=60)

            hub.set_copy("c1", seed("Available", "ForwardSuccessful"))
            spoke.system.report(reason="UpdateSuccessful", message="rolled out")
            eventually(
                lambda: not {"AddonStatusClusterDegraded", "AddonStatusAddonDegraded",
                             "AddonStatusFleetDegraded"} & set(_alerts(url)),
                "the alerts resolved", timeout=60,
            )  # fmt: skip
            # a healthy fleet: the fleet dashboard's Degraded share is 0, not "No data"
            [share] = [q for q in queries(FLEET_DASHBOARD) if "or vector(0)) / count" in q]
            eventually(lambda: _value(url, share) == 0.0, "a Degraded share of 0", timeout=60)
            for path in FILES:  # and every query runs on the healthy fleet too
                eventually(lambda p=path: _answered(url, queries(p)), path.name, timeout=60)
