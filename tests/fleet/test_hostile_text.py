"""Server text is hostile: every string `addon-status fleet` prints from the hub (names,
reasons, messages, versions, history, a Status message) is shown with its control characters
escaped (controller/terminal.py), so that a hub copy cannot clear the screen, move the cursor
or forge a line; JSON and YAML escape them themselves."""

from __future__ import annotations

import io
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from controller.cli import main
from controller.fleet.cluster import ClusterOcm, describe
from controller.fleet.command import watch_fleet
from controller.fleet.view import Filters, Output, render
from controller.kube.kubeconfig import KubeconfigSource, kubeconfig_yaml
from controller.kube.rest import RestKube
from controller.spoke.addon import PLURAL
from kubesim import APIServer
from tests.spoke.replication.conftest import ADMIN, CRD, TOKENS
from tests.support import eventually

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)
EVIL = "\x1b[2J\x1b[H\r\nforged\u202e\x85"  # clears, homes, a new line, reversed, NEL (C1)
SHOWN = "\\x1b[2J\\x1b[H\\x0d"  # what is shown of it (a table cell stops at the line break)
AT = "2026-01-01T11:00:00Z"


def hostile_copy() -> dict[str, Any]:
    """A hub copy whose every string the hub chose: the cluster's name included."""
    condition = {"status": "True", "reason": f"R{EVIL}", "message": f"M{EVIL}",
                 "lastTransitionTime": AT}  # fmt: skip
    return {
        "metadata": {"namespace": f"c1{EVIL}", "name": "observability-addon"},
        "status": {
            "conditions": [
                {**condition, "type": "Degraded"},
                {**condition, "type": f"T{EVIL}", "status": f"S{EVIL}"},
                {**condition, "type": "ResourcesHealthy", "status": f"S{EVIL}"},
            ],
            "versions": [{"name": f"metrics-collector{EVIL}", "version": f"2.15{EVIL}"}],
            "history": [{**condition, "type": "Degraded", "reason": f"H{EVIL}"}],
        },
    }


def assert_escaped(text: str) -> None:
    assert not [c for c in text if not c.isprintable() and c != "\n"], text
    assert not [line for line in text.splitlines() if line.startswith("forged")], text


def test_describe_escapes_every_string_of_the_copy_and_of_ocm() -> None:
    copy = hostile_copy()
    condition = copy["status"]["conditions"][0]
    addon = {"metadata": {"name": f"addon{EVIL}"},
             "status": {"conditions": [{**condition, "type": f"O{EVIL}"}]}}  # fmt: skip
    ocm = ClusterOcm(f"addon{EVIL}", addon, addon, None)
    text = describe(copy["metadata"]["namespace"], copy, ocm, NOW)
    assert_escaped(text)
    for shown in (f"c1{SHOWN}", f"R{SHOWN}", f"M{SHOWN}", f"T{SHOWN}", f"S{SHOWN}",
                  f"metrics-collector{SHOWN}", f"2.15{SHOWN}", f"H{SHOWN}", f"O{SHOWN}",
                  f"addon{SHOWN}"):  # fmt: skip
        assert shown in text, shown


@pytest.mark.parametrize("output", ["table", "wide", "name"])
def test_the_fleet_view_escapes_names_and_the_summary(output: str) -> None:
    text = render([hostile_copy()], NOW, filters=Filters(), output=Output(output))
    assert_escaped(text)
    assert f"c1{SHOWN}" in text.splitlines()[-1]  # the summary names the longest Degraded


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[APIServer, Path]]:
    with APIServer([CRD], tokens=TOKENS) as server:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=server.url, token=ADMIN), encoding="utf-8")
        yield server, kubeconfig


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["c1"], []], ids=["one-cluster", "the-fleet"])
def test_a_status_message_is_one_escaped_line(
    hub: tuple[APIServer, Path], argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    server, kubeconfig = hub
    server.faults.fail_next(1, 500, match=lambda info: info.resource == PLURAL, message=EVIL)
    assert main(["fleet", "--kubeconfig", str(kubeconfig), *argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and SHOWN in err
    assert_escaped(err)


@pytest.mark.integration
def test_a_watch_tells_a_failure_in_one_escaped_line(hub: tuple[APIServer, Path]) -> None:
    server, kubeconfig = hub
    server.faults.fail_next(1, 500, match=lambda info: info.resource == PLURAL, message=EVIL)
    err, stop = io.StringIO(), threading.Event()
    kube = RestKube(KubeconfigSource(kubeconfig).current())
    thread = threading.Thread(
        target=watch_fleet, args=(kube, lambda copies, now: "frame"),
        kwargs={"out": io.StringIO(), "err": err, "interval": 0.01, "stop": stop},
        daemon=True,
    )  # fmt: skip
    thread.start()
    try:
        eventually(lambda: "\n" in err.getvalue(), what="the failure told")
    finally:
        stop.set()
        thread.join(5)
    [line] = err.getvalue().splitlines()
    assert SHOWN in line
    assert_escaped(line)
