"""The report API over TLS: a reporter that trusts the CA gets its verdict; one that does not,
or one that speaks plain HTTP, gets none; a rotated certificate is served without a restart;
the TLS flags of `run` fail at start naming the flag; the thread that rewrites the files is
watched by the server's liveness. Certificates are made here, for 127.0.0.1, with a throwaway
CA."""

from __future__ import annotations

import argparse
import socket
import time
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from controller.kube.runnable import Runnable
from controller.report_api.flags import build_report_server
from controller.report_api.server import ReportServer, ServingCertificate
from controller.reporter.cli import add_report_parser
from controller.reporter.client import ReportClient, ReportUnavailable
from controller.spoke.options import RunOptions, add_run_flags
from statemachines.config import Config
from statemachines.errors import AddonStatusError
from tests.certificates import Issued, issue
from tests.clock import FakeClock
from tests.report_api.conftest import GRANTS, OPERATOR_SA, TOKENS, CoreSink, ServerFactory, call
from tests.support import eventually, run_options


@pytest.fixture(scope="module")
def first() -> Issued:
    return issue("first")


@pytest.fixture
def files(first: Issued, tmp_path: Path) -> tuple[Path, Path, Path]:
    return first.write(tmp_path)


@pytest.fixture
def tls_server(make_server: ServerFactory, files: tuple[Path, Path, Path]) -> ReportServer:
    _, cert, key = files
    return make_server(tls=ServingCertificate(cert, key, check_every=0.05))


def report(url: str, *, ca_file: Path | None, retries: int = 0) -> dict[str, object]:
    client = ReportClient(
        url,
        token=TOKENS["operator"],
        ca_file=None if ca_file is None else str(ca_file),
        retries=retries,
        timeout=2.0,
        deadline=3.0,
    )
    with client:
        return client.report(reason="UpdateSuccessful", message="deployed")


def test_a_report_over_https_with_the_ca_gets_its_verdict(
    tls_server: ReportServer, files: tuple[Path, Path, Path], sink: CoreSink
) -> None:
    assert tls_server.url.startswith("https://127.0.0.1:")
    assert report(tls_server.url, ca_file=files[0])["verdict"] == "accepted"
    assert len(sink.judged) == 1


def test_a_client_without_the_ca_gets_no_verdict(tls_server: ReportServer, sink: CoreSink) -> None:
    with pytest.raises(ReportUnavailable, match="certificate not trusted"):
        report(tls_server.url, ca_file=None)  # the system's CAs never signed the test CA
    assert sink.attempts == 0


def test_a_client_trusting_another_ca_gets_no_verdict(
    tls_server: ReportServer, tmp_path: Path, sink: CoreSink
) -> None:
    other_ca, _, _ = issue("other").write(tmp_path, stem="other", ca="other-ca")
    with pytest.raises(ReportUnavailable, match="certificate not trusted"):
        report(tls_server.url, ca_file=other_ca)
    assert sink.attempts == 0


def test_plain_http_to_the_tls_port_gets_no_verdict(
    tls_server: ReportServer, sink: CoreSink
) -> None:
    plain = tls_server.url.replace("https://", "http://")
    body = {"reason": "UpdateSuccessful"}
    with pytest.raises(ConnectionError):  # the server drops what is not a TLS handshake
        call(plain, body=body, token=TOKENS["operator"])
    assert sink.attempts == 0


def test_a_silent_client_does_not_hold_up_the_others(
    tls_server: ReportServer, files: tuple[Path, Path, Path]
) -> None:
    host, port = tls_server.url.removeprefix("https://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5):  # never sends a ClientHello
        assert report(tls_server.url, ca_file=files[0])["verdict"] == "accepted"


def test_a_rotated_certificate_is_served_without_a_restart(
    tls_server: ReportServer, files: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    first_ca = files[0]
    assert report(tls_server.url, ca_file=first_ca)["verdict"] == "accepted"
    second_ca, _, _ = issue("second").write(tmp_path, ca="second-ca")  # the same tls.* paths
    deadline = time.monotonic() + 5.0
    while True:
        try:
            verdict = report(tls_server.url, ca_file=second_ca)
            break
        except ReportUnavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)
    assert verdict["verdict"] in ("accepted", "heartbeat")
    with pytest.raises(ReportUnavailable, match="certificate not trusted"):
        report(tls_server.url, ca_file=first_ca)  # the old certificate is no longer served


def test_a_broken_replacement_keeps_the_last_good_certificate(
    tls_server: ReportServer, files: tuple[Path, Path, Path]
) -> None:
    ca, cert, _ = files
    cert.write_text("not a certificate\n")
    time.sleep(0.1)  # two reload checks
    assert report(tls_server.url, ca_file=ca)["verdict"] == "accepted"


# --- flags ----------------------------------------------------------------------------------


def build(tmp_path: Path, *argv: str) -> ReportServer:
    grants = tmp_path / "grants.yaml"
    grants.write_text(GRANTS)
    table = tmp_path / "tokens.csv"
    table.write_text(f"{TOKENS['operator']},{OPERATOR_SA}\n")
    access = [] if "--insecure" in argv else [f"--authorization={grants}", f"--token-table={table}"]
    args = run_options(["--report-address", "127.0.0.1:0", *access, *argv])
    config = Config.create()
    return build_report_server(
        args,
        sink=CoreSink(config, FakeClock()),
        config=config,
        registry=CollectorRegistry(),
        kube=lambda: None,
    )


def test_a_refresher_that_dies_is_a_problem_of_the_server(
    make_server: ServerFactory, files: tuple[Path, Path, Path]
) -> None:
    def refresh() -> None:
        raise RuntimeError("a bug")

    _, cert, key = files
    refresher = Runnable("serving-cert", refresh, lambda: None)
    server = make_server(tls=ServingCertificate(cert, key, refresher=refresher))
    eventually(lambda: not refresher.alive, "the refresher to die")
    assert server.problems(stuck_after=60.0) == ["serving-cert died (RuntimeError)"]
    server.stop()
    assert server.problems(stuck_after=60.0) == []  # stopped: nothing to say


def test_the_flags_build_an_https_server(tmp_path: Path, files: tuple[Path, Path, Path]) -> None:
    ca, cert, key = files
    server = build(tmp_path, "--tls-cert-file", str(cert), "--tls-key-file", str(key))
    with server:
        assert report(server.url, ca_file=ca)["verdict"] == "accepted"


def test_the_environment_sets_the_tls_files_of_run(
    tmp_path: Path, files: tuple[Path, Path, Path]
) -> None:
    _, cert, key = files
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_run_flags(parser)
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "ADDON_STATUS_TLS_CERT_FILE": str(cert)}
    environ["ADDON_STATUS_TLS_KEY_FILE"] = str(key)
    args = RunOptions.from_args(parser.parse_args([]), environ)
    assert (args.tls_cert_file, args.tls_key_file) == (cert, key)


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("--tls-cert-file", "{cert}"), "--tls-key-file"),
        (("--tls-key-file", "{key}"), "--tls-cert-file"),
        (("--tls-cert-file", "{cert}", "--tls-key-file", "{key}", "--insecure"), "--insecure"),
        (("--tls-cert-file", "{missing}", "--tls-key-file", "{key}"), "--tls-cert-file"),
        (("--tls-cert-file", "{key}", "--tls-key-file", "{key}"), "--tls-cert-file"),
        (("--tls-cert-file", "{cert}", "--tls-key-file", "{missing}"), "--tls-key-file"),
        (("--tls-cert-file", "{cert}", "--tls-key-file", "{cert}"), "--tls-key-file"),
        (("--tls-cert-file", "{cert}", "--tls-key-file", "{other_key}"), "--tls-key-file"),
    ],
)
def test_bad_tls_flags_fail_naming_the_flag(
    tmp_path: Path, files: tuple[Path, Path, Path], argv: tuple[str, ...], flag: str
) -> None:
    _, cert, key = files
    other_key = issue("other").write(tmp_path, stem="other", ca="other-ca")[2]
    paths = {"cert": cert, "key": key, "missing": tmp_path / "absent.pem", "other_key": other_key}
    with pytest.raises(AddonStatusError) as raised:  # OptionsError: a combination; else ConfigError
        build(tmp_path, *(a.format(**paths) for a in argv))
    message = str(raised.value)
    assert message.startswith(f"{flag}: "), message
    assert "\n" not in message


def test_the_report_command_verifies_with_the_ca_file(
    tls_server: ReportServer,
    files: tuple[Path, Path, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token = tmp_path / "op.token"
    token.write_text(TOKENS["operator"])
    top = argparse.ArgumentParser(prog="addon-status")
    add_report_parser(top.add_subparsers(dest="command", required=True))
    common = ["report", "--url", tls_server.url, "--reason", "UpdateSuccessful"]
    common += ["--token-file", str(token), "--deadline", "2"]
    args = top.parse_args([*common, "--ca-file", str(files[0])])
    assert args.handler(args) == 0
    assert '"verdict"' in capsys.readouterr().out
    args = top.parse_args([*common, "--ca-file", str(tmp_path / "absent.crt")])
    assert args.handler(args) == 2
    assert capsys.readouterr().err.startswith("--ca-file: ")
