"""The hub side's liveness, over the real client against kubesim: `/healthz` checks every thread
of `addon-status hub` — the mirror's loop and its informers, leader election, the metrics and
probe servers, the calls' deadlines — and fails naming the mirror when one of its threads is
gone."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta

import pytest

from controller.flags.options import Address
from controller.hub.app import HubReplica
from controller.hub.options import HubOptions
from tests.hub.hubside import HUB_SIDE, Hub, hub_server
from tests.support import WAIT, connection, eventually

pytestmark = pytest.mark.integration

LOOPBACK = Address(host="127.0.0.1", port=0)


@pytest.fixture
def hub() -> Iterator[Hub]:
    with hub_server() as made:
        yield made


def healthz(replica: HubReplica) -> tuple[int, str]:
    url = f"{replica.url(replica.probes)}/healthz?verbose"
    try:
        with urllib.request.urlopen(url, timeout=WAIT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_healthz_checks_every_thread_of_the_hub_side(hub: Hub) -> None:
    hub.cluster("cluster1")
    options = HubOptions(
        metrics_address=LOOPBACK, probe_address=LOOPBACK, leader_elect=True,
        lease_duration=timedelta(seconds=3), renew_deadline=timedelta(seconds=2),
        retry_period=timedelta(seconds=0.1), request_timeout=5.0,
        lease_namespace=HUB_SIDE.namespace,  # where its Role lets it hold the Lease
    )  # fmt: skip
    with connection(hub.server, "hub-a") as api, HubReplica(options, api, identity="a") as made:
        eventually(lambda: made.leading and made.side.synced, "a synced leader")
        code, body = healthz(made)
        checks = {line[3:].split(" ")[0] for line in body.splitlines() if line.startswith("[+]")}
        assert code == 200
        assert checks == {"mirror", "leader-election", "metrics", "probes", "deadlines"}
        made.side.caches.informers[0].stop(WAIT)  # one of its threads gone, not by the process
        code, body = healthz(made)
        assert code == 503 and "[-]mirror failed: mirror is not alive" in body
