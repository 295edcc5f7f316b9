"""Structured logs: one JSON object per line with time, level, logger, message and the record's
fields; secrets never reach the output, whether as a field, inside a field, or in the text."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.kube.api import NAMESPACE, whole
from controller.kube.kubeconfig import client_for, kubeconfig_yaml
from controller.kube.rest import RestKube
from controller.ops.logs import REDACTED, configure_logging, redact
from kubesim import APIServer, ServingTLS
from tests.certificates import Authority

TOKEN = "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0.c2ln"


@pytest.fixture
def output() -> Iterator[io.StringIO]:
    stream = io.StringIO()
    handler = configure_logging("debug", stream=stream)
    yield stream
    logging.getLogger().removeHandler(handler)


def lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_one_object_per_line_with_the_fields(output: io.StringIO) -> None:
    logging.getLogger("controller.spoke.worker").info(
        "status written", extra={"resourceVersion": "12", "attempt": 2}
    )
    (line,) = lines(output)
    assert {k: line[k] for k in ("level", "logger", "message", "resourceVersion", "attempt")} == {
        "level": "info",
        "logger": "controller.spoke.worker",
        "message": "status written",
        "resourceVersion": "12",
        "attempt": 2,
    }
    assert line["time"].endswith("+00:00")


@pytest.mark.parametrize(
    ("message", "extra"),
    [
        pytest.param("calling %s", {"token": TOKEN}, id="a-field-named-token"),
        pytest.param("headers", {"headers": {"Authorization": f"Bearer {TOKEN}"}}, id="nested"),
        pytest.param(f"got Authorization: Bearer {TOKEN}", {}, id="bearer-in-text"),
        pytest.param(  # http.client's refusal of a header holding a line break, escaped
            f"Invalid header value b'Bearer head\\n{TOKEN}'", {}, id="bearer-escaped-line-break"
        ),
        pytest.param(f"url?token={TOKEN}&x=1", {}, id="token-in-a-query"),
        pytest.param("login", {"password": TOKEN}, id="a-password-field"),
    ],
)
def test_secrets_are_redacted(output: io.StringIO, message: str, extra: dict[str, Any]) -> None:
    args = ("server",) if "%s" in message else ()
    logging.getLogger("controller.spoke.addon").warning(message, *args, extra=extra)
    text = output.getvalue()
    assert TOKEN not in text
    assert REDACTED in text


def test_an_exception_is_one_field_and_redacted_too(output: io.StringIO) -> None:
    try:
        raise RuntimeError(f"401 for Bearer {TOKEN}")
    except RuntimeError:
        logging.getLogger("controller").exception("call failed")
    (line,) = lines(output)
    assert "RuntimeError" in line["error"] and TOKEN not in line["error"]


def test_chatty_libraries_stay_quiet_at_debug(output: io.StringIO) -> None:
    logging.getLogger("urllib3.connectionpool").debug("GET /apis/... Authorization: x")
    assert output.getvalue() == ""


def test_redact_leaves_ordinary_values_alone() -> None:
    assert redact({"collector": "metrics-collector", "n": 3}) == {
        "collector": "metrics-collector",
        "n": 3,
    }


def test_an_insecure_kubeconfig_keeps_the_logs_one_json_object_per_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue item: with `insecure-skip-tls-verify`, urllib3's InsecureRequestWarning (one per
    request, two lines of free text on stderr) broke the one-object-per-line logs. Against an
    API server over TLS (kubesim, as kube-apiserver serves HTTPS), through the real client
    built from such a kubeconfig: the warning is a JSON record, told once."""
    cert, key = Authority("apiserver").server().write(tmp_path, "apiserver")
    kubeconfig = tmp_path / "kubeconfig"
    with APIServer([], tls=ServingTLS(cert, key)) as server:
        config = yaml.safe_load(kubeconfig_yaml(server=server.url, token="any"))
        config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
        kubeconfig.write_text(yaml.safe_dump(config))
        stream = io.StringIO()
        handler = configure_logging("info", stream=stream)
        try:
            with client_for(kubeconfig) as api:
                for _ in range(3):
                    RestKube(api).list(NAMESPACE, "", keep=whole)
        finally:
            logging.getLogger().removeHandler(handler)
    assert capsys.readouterr().err == "", "nothing bypasses the JSON handler"
    records = lines(stream)
    insecure = [r for r in records if "Unverified HTTPS request" in r["message"]]
    assert len(insecure) == 1, records
    assert (insecure[0]["level"], insecure[0]["logger"]) == ("warning", "py.warnings")
