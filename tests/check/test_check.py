"""`addon-status check` apart from the rollout (tests/ocm/test_check.py runs it there): its flags
and exit codes, the pod's command line it borrows, the serving certificate's validity, the
marks on a terminal that cannot print them, and a hub without Open Cluster Management."""

from __future__ import annotations

import datetime as dt
import io
import subprocess
import sys
from pathlib import Path

import pytest
from cryptography import x509

from controller.check.command import run_args
from controller.check.findings import bad, good, report
from controller.check.spoke import certificate_findings
from controller.cli import main
from controller.kube.kubeconfig import kubeconfig_yaml
from kubesim import APIServer
from tests.certificates import Authority
from tests.support import eventually


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
