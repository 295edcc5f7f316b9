"""`addon-status report`: prints the verdict and exits 0 for any verdict, refusals included;
exits 1 with the server's error on stderr when the report is rejected; exits 2 on usage errors,
an unreadable token file, or when no verdict can be had. And the report server's flags of `run`:
they build a working server, or fail at start naming the flag."""

from __future__ import annotations

import argparse
import http.server
import json
import re
import threading
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from controller.cli import main
from controller.kube.kubeconfig import kubeconfig_yaml
from controller.report_api.flags import build_report_server
from controller.report_api.server import ReportServer
from controller.reporter.cli import add_report_parser
from controller.spoke.options import RunOptions
from statemachines.config import Config
from statemachines.errors import AddonStatusError, ConfigError
from tests.report_api.conftest import GRANTS, MC_SA, TOKENS, CoreSink, call, free_port
from tests.support import MC, run_options


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    top = argparse.ArgumentParser(prog="addon-status")
    add_report_parser(top.add_subparsers(dest="command", required=True))
    args = top.parse_args(["report", *argv])
    code: int = args.handler(args)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def token_files(tmp_path: Path) -> dict[str, str]:
    files = {}
    for who, token in TOKENS.items():
        path = tmp_path / f"{who}.token"
        path.write_text(token + "\n")
        files[who] = str(path)
    return files


def test_a_verdict_is_printed_and_exits_0(
    server: ReportServer, token_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        *("--url", server.url, "--reason", "UpdateSuccessful", "--message", "deployed"),
        *("--token-file", token_files["operator"], "--observed-generation", "1"),
    )
    assert (code, err) == (0, "")
    assert json.loads(out)["verdict"] == "accepted"


def test_report_version_is_sent_with_an_update(
    server: ReportServer, token_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    operator = ("--url", server.url, "--token-file", token_files["operator"])
    update = ("--collector", MC, "--reason", "UpdateSuccessful", "--version", "2.15.0")
    code, out, err = run(capsys, *operator, *update)
    assert (code, err) == (0, "")
    assert json.loads(out)["verdict"] == "accepted"
    code, _, err = run(capsys, *operator, "--reason", "UpdateFailure", "--version", "2.15.0")
    assert code == 1
    assert "version" in err


def test_a_refused_verdict_exits_0_too(
    server: ReportServer, token_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    operator = ("--url", server.url, "--token-file", token_files["operator"])
    assert run(capsys, *operator, "--collector", MC, "--reason", "UpdateFailure")[0] == 0
    code, out, _ = run(
        capsys,
        *("--url", server.url, "--token-file", token_files["mc"]),
        *("--collector", MC, "--reason", "ForwardSuccessful"),
    )
    assert code == 0
    assert json.loads(out)["verdict"] == "refused"


def test_a_rejected_report_exits_1_naming_the_field(
    server: ReportServer, token_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        *("--url", server.url, "--token-file", token_files["mc"]),
        *("--collector", "uwl-metrics-collector", "--reason", "ForwardFailure"),
    )
    assert (code, out) == (1, "")
    assert "403" in err
    assert "(collector)" in err


def test_no_token_exits_1(server: ReportServer, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--url", server.url, "--reason", "UpdateSuccessful")
    assert code == 1
    assert "401" in err


def test_no_server_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    code, out, err = run(capsys, "--url", url, "--reason", "UpdateSuccessful", "--deadline", "0.3")
    assert (code, out) == (2, "")
    assert "no verdict" in err


def test_an_unreadable_token_file_exits_2(
    tmp_path: Path, server: ReportServer, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nope")
    code, _, err = run(capsys, "--url", server.url, "--reason", "X", "--token-file", missing)
    assert code == 2
    assert "cannot read the token" in err


def test_a_token_no_header_can_carry_exits_2_without_quoting_it(
    tmp_path: Path, server: ReportServer, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "two-lines.token"
    path.write_text("first-secret-line\nsecond-secret-line\n")
    code, out, err = run(
        capsys, "--url", server.url, "--reason", "UpdateSuccessful", "--token-file", str(path)
    )
    assert (code, out) == (2, "")
    assert "--token-file" in err and "secret-line" not in err


def test_a_bad_url_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--url", "localhost:8080", "--reason", "UpdateSuccessful")
    assert code == 2
    assert "--url" in err


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["--url", "http://127.0.0.1:1"], id="reason-missing"),
        pytest.param(
            ["--url", "http://x", "--reason", "R", "--observed-generation", "-1"], id="neg"
        ),
        pytest.param(
            ["--url", "http://x", "--reason", "R", "--observed-generation", "a"], id="nan"
        ),
    ],
)
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        run(capsys, *argv)
    assert caught.value.code == 2


def test_the_url_may_come_from_the_environment(
    server: ReportServer,
    token_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("ADDON_STATUS_URL", server.url)
    code, out, _ = run(
        capsys, "--reason", "UpdateSuccessful", "--token-file", token_files["operator"]
    )
    assert code == 0
    assert json.loads(out)["verdict"] == "accepted"


def test_the_url_is_required_without_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("ADDON_STATUS_URL", raising=False)
    with pytest.raises(SystemExit) as caught:
        run(capsys, "--reason", "UpdateSuccessful")
    assert caught.value.code == 2
    assert "--url" in capsys.readouterr().err


def run_flags(*argv: str) -> RunOptions:
    """The report API's settings as `run` takes them from `argv`."""
    return run_options(list(argv))


def no_cluster() -> object:
    raise AssertionError("only TokenReview needs the spoke's API client")


def build(sink: CoreSink, config: Config, *argv: str) -> ReportServer:
    args = run_flags(*argv)
    registry = CollectorRegistry()
    return build_report_server(args, sink=sink, config=config, registry=registry, kube=no_cluster)


def test_run_flags_build_an_insecure_loopback_server(sink: CoreSink, config: Config) -> None:
    server = build(sink, config, "--insecure", "--report-address", "127.0.0.1:0")
    with server:
        answer = call(server.url, body={"collector": MC, "reason": "ForwardFailure"})
    assert answer.status == 200


def test_run_flags_insecure_defaults_to_loopback(sink: CoreSink, config: Config) -> None:
    server = build(sink, config, "--insecure", "--report-address", ":0")
    with server:
        assert server.url.startswith("http://127.0.0.1:")


def test_run_flags_with_a_token_table_and_grants_file(
    sink: CoreSink, config: Config, tmp_path: Path
) -> None:
    (tmp_path / "tokens.csv").write_text(f"{TOKENS['mc']},{MC_SA}\n")
    (tmp_path / "grants.yaml").write_text(GRANTS)
    server = build(
        sink,
        config,
        *("--report-address", "127.0.0.1:0", "--token-table", str(tmp_path / "tokens.csv")),
        *("--authorization", str(tmp_path / "grants.yaml")),
    )
    with server:
        body = {"collector": MC, "reason": "ForwardFailure"}
        assert call(server.url, body=body, token=TOKENS["mc"]).status == 200
        assert call(server.url, body=body, token=TOKENS["operator"]).status == 401


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        pytest.param(["--insecure", "--report-address", "0.0.0.0:0"], "loopback", id="insecure"),
        pytest.param(["--report-address", "8090"], "--report-address", id="address"),
        pytest.param(
            ["--token-table", "/nonexistent", "--operator-identity", "a"],
            "token file",
            id="token-table",
        ),
        pytest.param(
            ["--insecure", "--operator-identity", "a", "--authorization", "g.yaml"],
            "--authorization",
            id="file-and-flags",
        ),
        pytest.param(["--insecure", "--collector-identity", "x"], "NAME=SUBJECT", id="pair"),
    ],
)
def test_run_flags_that_do_not_fit_name_the_flag(
    sink: CoreSink, config: Config, argv: list[str], flag: str
) -> None:
    with pytest.raises(AddonStatusError, match=re.escape(flag)):
        build(sink, config, *argv)


def test_run_flags_without_grants_name_the_flag(
    sink: CoreSink, config: Config, tmp_path: Path
) -> None:
    (tmp_path / "tokens.csv").write_text(f"{TOKENS['mc']},{MC_SA}\n")
    with pytest.raises(ConfigError, match="--authorization"):
        build(sink, config, "--token-table", str(tmp_path / "tokens.csv"))


@pytest.mark.parametrize(
    "argv",
    [
        ["--insecure", "--tls-cert-file", "a.crt", "--tls-key-file", "a.key"],
        ["--authorization", "g.yaml", "--operator-identity", "a"],
        ["--issue-serving-cert", "s", "--insecure"],
        ["--tls-cert-file", "a.crt", "--authorization", "g.yaml"],
    ],
    ids=["insecure-and-tls", "grants-twice", "issue-and-insecure", "cert-without-key"],
)
def test_run_exits_2_with_one_line_for_report_flags_that_do_not_fit(
    argv: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Refused with the other options, before anything starts (docs/reference/cli.md)."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(kubeconfig_yaml(server="https://127.0.0.1:1", token="t"), "utf-8")
    assert main(["run", "--kubeconfig", str(kubeconfig), *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--" in err


def test_a_hostile_servers_rejection_is_one_escaped_line(
    token_files: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The report client may be pointed at any server: its words cannot clear the screen or
    forge a line on the caller's terminal."""
    evil = "\x1b[2J\r\nverdict: accepted\u202e"
    body = json.dumps({"error": {"reason": evil, "field": evil, "message": evil}}).encode()

    class Hostile(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(422)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    hostile = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    threading.Thread(target=hostile.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{hostile.server_address[1]}"
        code, _, err = run(capsys, "--url", url, "--reason", "UpdateSuccessful",
                           "--token-file", token_files["operator"])  # fmt: skip
    finally:
        hostile.shutdown()
        hostile.server_close()
    assert code == 1 and err.count("\n") == 1
    assert "\\x1b[2J\\x0d\\x0averdict: accepted\\u202e" in err
    assert not [c for c in err.rstrip("\n") if not c.isprintable()]
