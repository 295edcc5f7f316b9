"""`addon-status run` as an operator meets it: flags and a kubeconfig with a bearer token, the
status written, JSON logs without the token, exit 0 on SIGTERM; and the mistakes that stop it
at start (a bad flag, a missing kubeconfig, a missing CR) as one line, never a traceback."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from controller.spoke.addon import PLURAL
from controller.spoke.app import run_command
from controller.spoke.options import add_run_flags
from kubesim import APIServer, UserInfo
from tests.spoke.fakes import NAMESPACE
from tests.spoke.integration.conftest import CRD, Addon
from tests.support import api_client

pytestmark = pytest.mark.integration

TOKEN = "s3cr3t-spoke-token-do-not-log"
ROOT = Path(__file__).resolve().parents[3]
MAIN = (
    "import argparse, sys\n"
    "from controller.spoke.options import add_run_flags\n"
    "from controller.spoke.app import run_command\n"
    "parser = argparse.ArgumentParser()\n"
    "add_run_flags(parser)\n"
    "sys.exit(run_command(parser.parse_args(sys.argv[1:])))\n"
)
LOOPBACK = ["--metrics-address", "127.0.0.1:0", "--probe-address", "127.0.0.1:0"]
REPORTS = ["--report-address", "127.0.0.1:0", "--insecure"]  # who may report: anyone on loopback


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens={TOKEN: UserInfo("system:serviceaccount:x:addon-status")}) as s:
        api = api_client(s, TOKEN)
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        yield s


@pytest.fixture
def kubeconfig(server: APIServer, tmp_path: Path) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters: [{{name: spoke, cluster: {{server: '{server.url}'}}}}]\n"
        f"users: [{{name: controller, user: {{token: {TOKEN}}}}}]\n"
        "contexts: [{name: spoke, context: {cluster: spoke, user: controller}}]\n"
        "current-context: spoke\n"
    )
    return path


def launch(*argv: str, tmpdir: Path | None = None) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KUBE", "ADDON_STATUS_"))}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    return subprocess.Popen(
        [sys.executable, "-c", MAIN, *argv],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_runs_until_sigterm_and_logs_json_without_the_token(
    server: APIServer, kubeconfig: Path
) -> None:
    Addon(api_client(server, TOKEN)).create()
    process = launch("--kubeconfig", str(kubeconfig), "--log-level", "debug", *LOOPBACK, *REPORTS)
    try:
        deadline = time.monotonic() + 30
        while server.count_requests(verbs=("update",), resource=PLURAL, subresource="status") < 1:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the controller wrote no status"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert TOKEN not in stderr
    records = [json.loads(line) for line in stderr.splitlines()]
    assert {"time", "level", "logger", "message"} <= set(records[0])
    assert records[-1]["message"] == "addon-status run stopped"


def test_the_self_issued_key_pair_is_removed_when_run_exits(
    server: APIServer, kubeconfig: Path, tmp_path: Path
) -> None:
    """`--issue-serving-cert` writes the pair for the server into a directory of its own; the
    private key does not outlive the process."""
    Addon(api_client(server, TOKEN)).create()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    issuing = ["--report-address", "127.0.0.1:0", "--issue-serving-cert", "serving-cert",
               "--operator-identity", "system:serviceaccount:x:operator"]  # fmt: skip
    process = launch("--kubeconfig", str(kubeconfig), *LOOPBACK, *issuing, tmpdir=tmpdir)
    try:
        deadline = time.monotonic() + 30
        while server.count_requests(verbs=("update",), resource=PLURAL, subresource="status") < 1:
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "the controller wrote no status"
            time.sleep(0.05)
        [written] = tmpdir.iterdir()
        assert (written / "tls.key").is_file()
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=15)
    finally:
        process.kill()
    assert process.returncode == 0, stderr
    assert list(tmpdir.iterdir()) == []


def test_a_missing_cr_is_one_line_and_exit_1(kubeconfig: Path) -> None:
    process = launch("--kubeconfig", str(kubeconfig), *LOOPBACK, *REPORTS)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 1
    assert stderr.strip().splitlines()[-1] == (
        f"addon-status run: cannot start: the addon CR {NAMESPACE}/observability-addon does not"
        " exist (kind ObservabilityAddon; set --addon-name / --addon-namespace)"
    )
    assert "Traceback" not in stderr


def test_a_servers_words_at_start_are_one_escaped_line(server: APIServer, kubeconfig: Path) -> None:
    """What the API server said when `run` cannot start reaches a terminal: its control
    characters are written out, so that it cannot clear the screen or forge a line."""
    evil = "\x1b[2J\r\naddon-status run stopped\u202e"
    server.faults.fail_next(100, 403, message=evil, match=lambda info: info.resource == PLURAL)
    process = launch("--kubeconfig", str(kubeconfig), *LOOPBACK, *REPORTS)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("addon-status run: cannot start: ")
    assert "\\x1b[2J\\x0d\\x0aaddon-status run stopped\\u202e" in last
    assert "\x1b" not in stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        pytest.param(
            ["--kubeconfig", "/no/such/kubeconfig"],
            "addon-status run: kubeconfig /no/such/kubeconfig: no such file",
            id="missing-kubeconfig",
        ),
        pytest.param(
            ["--kubeconfig", __file__, "--degrade-after", "soon"],
            "addon-status run: --degrade-after / ADDON_STATUS_DEGRADE_AFTER: 'soon' is not a "
            "duration (write e.g. 30s, 10m, 1h30m)",
            id="bad-duration",
        ),
    ],
)
def test_bad_options_are_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    assert run_command(parser.parse_args(argv)) == 2
    assert capsys.readouterr().err == message + "\n"
