"""`fleet` measures ages on the hub's clock — the `Date` header every answer of kube-apiserver
carries — not on the machine it runs on, whose clock may be skewed from the hub's (a laptop, a
VM resumed from sleep), and which the demo's hub does not follow (it runs on the story's time).
kubesim stamps and tells the time of the clock it is given, as kube-apiserver its host's."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path

import pytest
from kubernetes import client

from controller.cli import main
from controller.fleet.clock import HubClock
from controller.hub.mirror import cluster_namespace
from controller.kube.connection import Connection
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.kube.rest import RestKube
from controller.spoke.addon import GROUP, PLURAL, VERSION
from kubesim import APIServer
from tests.fleet.test_fleet_integration import write_status
from tests.kube.test_hostile_server import Answer, endless, gzipped, serve, trickle  # noqa: F401
from tests.report_api.conftest import free_port
from tests.spoke.replication.conftest import ADMIN, CRD, TOKENS, addon, api_client

pytestmark = pytest.mark.integration
# the copies' transitions are at 2026-03-01T11:00:00Z (write_status); the hub says 11:05
HUB_NOW = datetime(2026, 3, 1, 11, 5, tzinfo=UTC)


def test_kubesim_stamps_and_tells_the_time_of_its_clock() -> None:
    with APIServer([CRD], tokens=TOKENS, clock=lambda: HUB_NOW) as hub:
        bearer = {"Authorization": f"Bearer {ADMIN}"}
        asked = urllib.request.Request(f"{hub.url}/version", headers=bearer)
        with urllib.request.urlopen(asked, timeout=30) as answer:
            assert parsedate_to_datetime(answer.headers["Date"]) == HUB_NOW
        hub.put_object("", "v1", "namespaces", cluster_namespace("edge-1"))
        with api_client(hub) as admin:
            made = client.CustomObjectsApi(admin).create_namespaced_custom_object(
                GROUP, VERSION, "edge-1", PLURAL, addon("edge-1")
            )
    assert made["metadata"]["creationTimestamp"] == "2026-03-01T11:05:00Z"


def test_fleet_ages_are_the_hubs_not_this_machines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """This machine's clock is months after the hub's: the ages are still 5 minutes."""
    with APIServer([CRD], tokens=TOKENS, clock=lambda: HUB_NOW) as hub:
        hub.put_object("", "v1", "namespaces", cluster_namespace("edge-1"))
        with api_client(hub) as admin:
            client.CustomObjectsApi(admin).create_namespaced_custom_object(
                GROUP, VERSION, "edge-1", PLURAL, addon("edge-1")
            )
        write_status(hub, "edge-1", "Degraded", "ForwardFailure")
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token=ADMIN), encoding="utf-8")
        assert main(["fleet", "--kubeconfig", str(kubeconfig)]) == 0
        out = capsys.readouterr().out
        assert main(["fleet", "--kubeconfig", str(kubeconfig), "edge-1"]) == 0
        described = capsys.readouterr().out
    [row] = [line.split() for line in out.splitlines() if line.startswith("edge-1")]
    assert "5m" in row, out
    assert "1 changed state in the last hour" in out
    assert "Since:     5m" in described, described


def test_a_hub_that_cannot_be_asked_leaves_the_local_clock() -> None:
    clock = HubClock(RestKube(Connection(f"http://127.0.0.1:{free_port()}")))
    assert abs(clock() - datetime.now(UTC)) < timedelta(minutes=1)


@pytest.mark.parametrize(
    "answer", [gzipped, trickle, endless], ids=["gzip-bomb", "trickle", "endless"]
)
def test_a_hostile_version_answer_is_bounded_as_every_call_and_leaves_the_local_clock(
    serve: Callable[[Answer], RestKube],  # noqa: F811 - the fixture
    answer: Answer,
) -> None:
    """`GET /version` goes through the seam: never inflated, read within the call's deadline
    (1 s here) and `MAX_ANSWER` bytes."""
    clock = HubClock(serve(answer))
    assert abs(clock() - datetime.now(UTC)) < timedelta(minutes=1)
