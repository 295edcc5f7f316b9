"""`addon-status check` apart from the rollout (tests/ocm/test_check.py runs it there): its flags
and exit codes, the pod's command line it borrows, the serving certificate's validity, the
marks on a terminal that cannot print them, and a hub without Open Cluster Management."""

from __future__ import annotations

import contextlib
import datetime as dt
import http.server
import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import urllib3
from cryptography import x509

from controller.check.command import run_args
from controller.check.findings import bad, good, report
from controller.check.spoke import certificate_findings
from controller.cli import main
from controller.kube.api import ADDON
from controller.kube.kubeconfig import kubeconfig_yaml
from kubesim import APIServer
from tests.certificates import Authority
from tests.spoke.fakes import NAMESPACE
from tests.spoke.integration.conftest import CRD
from tests.support import eventually, kube_of


def test_the_flags_of_the_running_controller_are_read_from_its_command_line(
    tmp_path: Path,
) -> None:
    (tmp_path / "1").mkdir()
    (tmp_path / "1" / "cmdline").write_bytes(
        b"/usr/local/bin/addon-status\0run\0--profile=acm\0--leader-elect\0"
    )
    assert run_args(1, proc=tmp_path) == ["--profile=acm", "--leader-elect"]
    (tmp_path / "2").mkdir()
    (tmp_path / "2" / "cmdline").write_bytes(b"/bin/sh\0-c\0sleep 1\0")
    with pytest.raises(ValueError, match="process 2 is not `addon-status run`: /bin/sh -c"):
        run_args(2, proc=tmp_path)


def test_a_pid_that_is_not_the_controller_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "spoke", "--pid", "999999999"]) == 2
    assert capsys.readouterr().err.startswith("addon-status check spoke: --pid 999999999: ")


def test_a_missing_kubeconfig_exits_2_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "hub", "--kubeconfig", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("addon-status check hub: ") and "nowhere" in err
    assert len(err.splitlines()) == 1


@pytest.mark.integration
def test_a_hub_without_open_cluster_management_says_what_to_install(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with APIServer([], anonymous=True) as hub:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(kubeconfig_yaml(server=hub.url, token="admin"), encoding="utf-8")
        assert main(["check", "hub", "--kubeconfig", str(kubeconfig)]) == 1
    out = capsys.readouterr().out
    assert "✘ ManagedClusterAddOn addon.open-cluster-management.io/v1alpha1 is not served: " \
           "install Open Cluster Management v1.3 or later" in out  # fmt: skip
    assert "ClusterManagementAddOn" in out and "exists" not in out  # it stops there


def _pem(valid: dt.timedelta) -> bytes:
    return Authority("serving", valid=valid).server("reports.example.svc").cert


@pytest.mark.parametrize(
    ("valid", "ok", "says"),
    [
        (dt.timedelta(days=365), True, "for reports.example.svc is valid until "),
        (dt.timedelta(days=10), False, "in under 30 days"),
        (-dt.timedelta(minutes=1), False, "expired on "),
    ],
    ids=["valid", "expiring", "expired"],
)
def test_the_serving_certificate_is_judged_by_what_is_left_of_it(
    valid: dt.timedelta, ok: bool, says: str
) -> None:
    pem = _pem(valid)
    findings = certificate_findings(pem, dt.datetime.now(dt.UTC))  # after it was made
    finding = next(findings)
    assert (finding.ok, says in finding.what) == (ok, True), finding
    with pytest.raises(StopIteration) as ended:
        next(findings)
    assert isinstance(ended.value.value, x509.Certificate)


def test_what_is_not_a_certificate_is_said_so() -> None:
    [finding] = list(certificate_findings(b"not a certificate", dt.datetime.now(dt.UTC)))
    assert (finding.ok, finding.what) == (False, "the serving certificate is not a PEM certificate")


def test_marks_fall_back_to_words_where_the_terminal_cannot_print_them() -> None:
    out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    assert not report(["spoke", good("fine"), bad("broken", "fix it")], out)
    out.seek(0)
    assert out.read().splitlines() == ["== spoke", "ok fine", "FAIL broken: fix it"]


def test_pid_takes_the_running_controllers_flags_and_a_flag_given_here_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A process whose command line reads `... run --kubeconfig A`: its flags are checked
    (A is named missing), unless `--kubeconfig B` is given beside `--pid` (B is named)."""
    stand_in = [sys.executable, "-c", "import time; time.sleep(60)", "run",
                "--kubeconfig", str(tmp_path / "from-the-process")]  # fmt: skip
    with subprocess.Popen(stand_in) as process:
        try:  # a child forked a moment ago may not have exec'd its command line yet
            eventually(lambda: b"run" in Path(f"/proc/{process.pid}/cmdline").read_bytes(),
                       what="the stand-in's command line")  # fmt: skip
            assert main(["check", "spoke", "--pid", str(process.pid)]) == 2
            assert "from-the-process: no such file" in capsys.readouterr().err
            given = ["--kubeconfig", str(tmp_path / "given-here")]
            assert main(["check", "spoke", "--pid", str(process.pid), *given]) == 2
            assert "given-here: no such file" in capsys.readouterr().err
        finally:
            process.kill()


class HostileFront(http.server.ThreadingHTTPServer):
    """An API server that is kubesim behind a front: every request is forwarded, except those
    `answers` (method and path suffix: status code and body) answers itself, as a hostile or
    broken server would."""

    daemon_threads = True

    def __init__(self, upstream: str, answers: dict[tuple[str, str], tuple[int, Any]]) -> None:
        self.upstream, self.answers = upstream, answers
        super().__init__(("127.0.0.1", 0), _Forward)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Forward(http.server.BaseHTTPRequestHandler):
    server: HostileFront
    protocol_version = "HTTP/1.1"

    def _any(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?")[0]
        answer = next((a for (m, p), a in self.server.answers.items()
                       if m == self.command and path.endswith(p)), None)  # fmt: skip
        if answer is None:
            headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
            forwarded = urllib3.request(self.command, self.server.upstream + self.path,
                                        body=body or None, headers=headers)  # fmt: skip
            status, data = forwarded.status, forwarded.data
        else:
            status, data = answer[0], json.dumps(answer[1]).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._any()

    def do_POST(self) -> None:
        self._any()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def hostile_spoke(
    answers: dict[tuple[str, str], tuple[int, Any]], tmp_path: Path
) -> Iterator[Path]:
    """A spoke with the addon CR, behind a front answering `answers`; its kubeconfig."""
    with APIServer([CRD], namespaces=[NAMESPACE]) as spoke:
        kube_of(spoke).create(ADDON, NAMESPACE, {
            "apiVersion": ADDON.api_version, "kind": ADDON.kind,
            "metadata": {"name": "observability-addon", "namespace": NAMESPACE}})  # fmt: skip
        front = HostileFront(spoke.url, answers)
        threading.Thread(target=front.serve_forever, daemon=True).start()
        try:
            kubeconfig = tmp_path / "kubeconfig"
            kubeconfig.write_text(kubeconfig_yaml(server=front.url, token="admin"))
            yield kubeconfig
        finally:
            front.shutdown()
            front.server_close()


def check_spoke(kubeconfig: Path, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["check", "spoke", "--kubeconfig", str(kubeconfig), "--addon-namespace",
                 NAMESPACE, "--insecure", "--report-address", "127.0.0.1:1"]) == 1  # fmt: skip
    return capsys.readouterr().out.splitlines()


REVIEWS = "/selfsubjectaccessreviews"


@pytest.mark.integration
@pytest.mark.parametrize(
    "review",
    [
        {"status": "allowed"},
        {"status": {"allowed": "true"}},
        {"status": [{"allowed": True}]},
    ],
    ids=["status-a-string", "allowed-a-string", "status-a-list"],
)
def test_a_malformed_access_review_is_one_failed_line_never_a_traceback(
    review: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    answer = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", **review}
    with hostile_spoke({("POST", REVIEWS): (201, answer)}, tmp_path) as kubeconfig:
        lines = check_spoke(kubeconfig, capsys)
    asked = [line for line in lines if "permissions" in line or "may " in line]
    assert len(asked) == 1 and asked[0].startswith(
        "✘ its permissions cannot be asked (SelfSubjectAccessReview): "
    ), lines


@pytest.mark.integration
def test_check_shows_what_a_server_says_with_control_characters_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A hostile server's text (a generation, a Status message) cannot clear the screen or
    forge a ✔ line of its own."""
    forged = "\x1b[2J\x1b[H\r✔ may do everything\n✔ all is well\u202e"
    cr = {"apiVersion": ADDON.api_version, "kind": ADDON.kind,
          "metadata": {"name": "observability-addon", "namespace": NAMESPACE,
                       "generation": forged}}  # fmt: skip
    denied = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": 403,
              "reason": "Forbidden", "message": forged}  # fmt: skip
    answers = {("GET", "/observability-addon"): (200, cr), ("POST", REVIEWS): (403, denied)}
    with hostile_spoke(answers, tmp_path) as kubeconfig:
        lines = check_spoke(kubeconfig, capsys)
    assert not [c for line in lines for c in line if not c.isprintable()], lines
    assert not [line for line in lines if line.startswith("✔ all is well")]
    assert any("\\x1b[2J\\x1b[H\\x0d✔ may do everything\\x0a✔ all is well\\u202e" in line
               for line in lines), lines  # fmt: skip


def test_report_escapes_every_finding_and_heading() -> None:
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    report(["cluster c1\x1b[2J", bad("R\rforged", "fix\n✔ fine"), good("ok\x07")], out)
    out.seek(0)
    assert out.read().splitlines() == [
        "► cluster c1\\x1b[2J", "✘ R\\x0dforged: fix\\x0a✔ fine", "✔ ok\\x07",
    ]  # fmt: skip
