"""The report API refuses what the addon CR cannot hold, before the worker sees it: an
`observedGeneration` outside int64 (the CR's `metadata.generation` is one), a string that is
not valid Unicode (a lone UTF-16 surrogate), a body that is not UTF-8; and it cleans control
characters out of a message instead of refusing the report (a collector's failure report must
not be lost because the remote error it quotes holds a stray escape byte)."""

from __future__ import annotations

import pytest

from controller.report_api.payload import load_json
from controller.report_api.server import ReportServer
from tests.report_api.conftest import TOKENS, CoreSink, call


def _send(server: ReportServer, body: bytes) -> tuple[int, dict[str, object]]:
    answer = call(server.url, body=body, token=TOKENS["mc"])
    return answer.status, answer.body


@pytest.mark.parametrize(
    "literal",
    [
        pytest.param(b"9223372036854775808", id="2^63"),
        pytest.param(b"1000000000000000000000", id="10^21-integer"),
        pytest.param(b"1e21", id="1e21"),
        pytest.param(b"-1", id="negative"),
    ],
)
def test_observed_generation_outside_int64_is_422(
    server: ReportServer, sink: CoreSink, literal: bytes
) -> None:
    body = b'{"collector": "metrics-collector", "reason": "ForwardSuccessful", '
    code, answer = _send(server, body + b'"observedGeneration": ' + literal + b"}")
    assert code == 422
    error = answer["error"]
    assert isinstance(error, dict) and error["field"] == "observedGeneration"
    assert "0 <= n < 2^63" in error["message"]
    assert sink.judged == []


def test_the_largest_int64_generation_is_well_formed(server: ReportServer) -> None:
    body = b'{"collector": "metrics-collector", "reason": "ForwardSuccessful", '
    code, answer = _send(server, body + b'"observedGeneration": 9223372036854775807}')
    assert (code, answer["verdict"]) == (200, "refused")  # newer than the CR: FutureGeneration


@pytest.mark.parametrize(
    ("body", "field"),
    [
        pytest.param(
            b'{"collector": "metrics-collector", "reason": "ForwardSuccessful", '
            b'"message": "remote \\ud800 write"}',
            "message",
            id="message",
        ),
        pytest.param(b'{"collector": "metrics-\\udc00", "reason": "ForwardSuccessful"}',
                     "collector", id="collector"),
        pytest.param(b'{"reason": "Update\\ud800", "collector": "metrics-collector"}',
                     "reason", id="reason"),
    ],
)  # fmt: skip
def test_a_lone_surrogate_is_422_naming_the_field(
    server: ReportServer, sink: CoreSink, body: bytes, field: str
) -> None:
    code, answer = _send(server, body)
    error = answer["error"]
    assert code == 422
    assert isinstance(error, dict) and error["field"] == field
    assert "lone surrogate" in error["message"]
    assert sink.judged == []


def test_utf8_of_a_surrogate_is_400_like_all_invalid_utf8(
    server: ReportServer, sink: CoreSink
) -> None:
    head = b'{"collector": "metrics-collector", "reason": "ForwardSuccessful", "message": "'
    for raw in (b"\xed\xa0\x80", b"\xff"):
        code, answer = _send(server, head + raw + b'"}')
        assert code == 400, raw
        error = answer["error"]
        assert isinstance(error, dict) and "utf-8" in error["message"]
    assert sink.judged == []


def test_control_characters_in_a_message_are_replaced(server: ReportServer, sink: CoreSink) -> None:
    head = b'{"collector": "metrics-collector", "reason": "ForwardFailure", "message": "'
    text = b"503\\r\\u0000 \\u001b[31mred\\u007f\\u0085\\tend\\nnext line"
    code, answer = _send(server, head + text + b'"}')
    assert (code, answer["verdict"]) == (200, "accepted")
    assert sink.judged[-1].message == "503\ufffd\ufffd \ufffd[31mred\ufffd\ufffd\tend\nnext line"


def test_load_json_takes_only_utf8_json() -> None:
    assert load_json('{"m": "\u00e9\U0001f600"}'.encode()) == {"m": "\u00e9\U0001f600"}
    for bad in (b'{"m": "\xed\xa0\x80"}', '{"m": 1}'.encode("utf-16"), b'{"m": NaN}'):
        with pytest.raises(ValueError):
            load_json(bad)
