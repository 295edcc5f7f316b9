"""An outage of the spoke API server is visible: the API server is stopped and started again
on the same port (as a restarted kube-apiserver comes back behind its Service), and the
controller's log, as `run` writes it, has one line when the watch loses the CR and one when it
reads it again, nothing per retry; the metrics have the watch's series from the start and
show the outage while it lasts."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from controller.kube.backoff import Backoff
from controller.ops.logs import configure_logging
from kubesim import APIServer
from tests.spoke.integration.conftest import Addon, SpokeFactory, scrape
from tests.spoke.support import settle
from tests.support import eventually

pytestmark = pytest.mark.integration

RESTARTS = "addon_status_watch_restarts_total"
CONNECTED = "addon_status_watch_connected"
WAIT = 10.0


@pytest.fixture
def log() -> Iterator[io.StringIO]:
    """The JSON log `addon-status run` writes, at its default level."""
    root = logging.getLogger()
    level = root.level
    stream = io.StringIO()
    handler = configure_logging("info", stream=stream)
    yield stream
    root.removeHandler(handler)
    root.setLevel(level)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_an_api_server_outage_is_logged_once_lost_once_restored_and_counted(
    server: APIServer, addon: Addon, spoke: SpokeFactory, log: io.StringIO
) -> None:
    controller = spoke(watch_backoff=Backoff(initial=0.05, maximum=0.2))
    settle(controller.worker)
    port = controller.metrics_server.port

    def sample(name: str, **labels: str) -> float:
        return scrape(port)[(name, tuple(sorted(labels.items())))]

    assert sample(RESTARTS, watch="addon", cause="error") == 0  # exported before it ever counted
    assert sample(CONNECTED, watch="addon") == 1
    log.truncate(0)
    log.seek(0)

    server.stop()
    eventually(lambda: sample(CONNECTED, watch="addon") == 0, "the watch to be lost")
    eventually(lambda: sample(RESTARTS, watch="addon", cause="error") >= 5, "five failed tries")
    server.start()
    eventually(lambda: sample(CONNECTED, watch="addon") == 1, "the watch to be restored")

    told = lines(log)
    assert [(line["level"], line["logger"]) for line in told] == [
        ("warning", "controller.kube.reflector"),
        ("info", "controller.kube.reflector"),
    ], told
    lost, restored = told
    assert lost["message"].startswith("lost the watch on ObservabilityAddon")
    assert "ObservabilityAddon" in lost["error"]  # the call that failed (its OS words vary)
    assert restored["message"].endswith("is restored")
    assert restored["failedAttempts"] >= 5
    assert restored["failedAttempts"] == sample(RESTARTS, watch="addon", cause="error")
    assert restored["lostSeconds"] > 0
