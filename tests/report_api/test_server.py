"""The report API over real HTTP: every kind of bad input gets its 4xx and a JSON error naming
the field; verdicts (refusals included) are 200s from the real core; a sink that is not the
leader or too slow is a 503 with Retry-After; connections stay usable; metrics count outcomes;
no token ever reaches a log."""

from __future__ import annotations

import http.client
import logging
import socket
import threading
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from controller.report_api.server import ReportServer
from statemachines.config import Config
from statemachines.vocabulary import ACM
from tests.report_api.conftest import TOKENS, CoreSink, ServerFactory, call
from tests.support import MC, UWL

OP = TOKENS["operator"]


def assert_error(answer: Any, status: int, *, field: str | None, reason: str) -> None:
    """The one shape every error has: `{"error": {code, reason, field, message}}`."""
    assert answer.status == status, answer.body
    assert answer.headers["Content-Type"] == "application/json"
    error = answer.body["error"]
    assert set(error) == {"code", "reason", "field", "message"}
    assert (error["code"], error["reason"], error["field"]) == (status, reason, field)
    assert error["message"]


BAD_BODIES = [
    pytest.param(b'{"reason": "UpdateSuccessful"', 400, None, "BadRequest", id="malformed-json"),
    pytest.param(b'{"reason": NaN}', 400, None, "BadRequest", id="nan-is-not-json"),
    pytest.param(b"\xff\xfe", 400, None, "BadRequest", id="not-utf8"),
    pytest.param(b"[" * 30000 + b"]" * 30000, 400, None, "BadRequest", id="nested-too-deep"),
    pytest.param(b"[]", 422, None, "Invalid", id="not-an-object"),
    pytest.param(b"{}", 422, "reason", "Invalid", id="reason-missing"),
    pytest.param(b'{"reason": "Flapping"}', 422, "reason", "Invalid", id="unknown-reason"),
    pytest.param(b'{"reason": "ReportsStale"}', 422, "reason", "Invalid", id="controller-reason"),
    pytest.param(
        b'{"collector": "kube-state-metrics", "reason": "UpdateFailure"}',
        422,
        "collector",
        "Invalid",
        id="unknown-collector",
    ),
    pytest.param(b'{"reason": 7}', 422, "reason", "Invalid", id="reason-not-a-string"),
    pytest.param(
        b'{"reason": "UpdateFailure", "collector": 5}',
        422,
        "collector",
        "Invalid",
        id="collector-int",
    ),
    pytest.param(
        b'{"reason": "UpdateFailure", "message": ["x"]}',
        422,
        "message",
        "Invalid",
        id="message-list",
    ),
    pytest.param(
        b'{"reason": "UpdateFailure", "observedGeneration": "3"}',
        422,
        "observedGeneration",
        "Invalid",
        id="generation-string",
    ),
    pytest.param(
        b'{"reason": "UpdateFailure", "observedGeneration": -1}',
        422,
        "observedGeneration",
        "Invalid",
        id="generation-negative",
    ),
    pytest.param(
        b'{"reason": "UpdateFailure", "observedGeneration": true}',
        422,
        "observedGeneration",
        "Invalid",
        id="generation-bool",
    ),
    pytest.param(
        b'{"reason": "UpdateFailure", "collectr": "metrics-collector"}',
        422,
        "collectr",
        "Invalid",
        id="unknown-field",
    ),
    pytest.param(
        b'{"reason": "ForwardFailure"}', 422, "collector", "Invalid", id="forward-no-collector"
    ),
    pytest.param(
        b'{"reason": "UpdateFailure", "version": "2.15.0"}',
        422,
        "version",
        "Invalid",
        id="a-version-comes-only-with-update-successful",
    ),
    pytest.param(
        b'{"reason": "UpdateSuccessful", "version": "' + b"v" * 65 + b'"}',
        422,
        "version",
        "Invalid",
        id="a-version-has-at-most-64-characters",
    ),
]


@pytest.mark.parametrize(("body", "status", "field", "reason"), BAD_BODIES)
def test_bad_body_is_a_4xx_naming_the_field(
    server: ReportServer,
    sink: CoreSink,
    *,
    body: bytes,
    status: int,
    field: str | None,
    reason: str,
) -> None:
    answer = call(server.url, body=body, token=OP)
    assert_error(answer, status, field=field, reason=reason)
    assert sink.judged == []


REQUESTS = [
    pytest.param({"Content-Type": "text/plain"}, 415, "UnsupportedMediaType", id="text-plain"),
    pytest.param({"Content-Type": ""}, 415, "UnsupportedMediaType", id="no-content-type"),
    pytest.param(
        {"Content-Type": "application/x-www-form-urlencoded"},
        415,
        "UnsupportedMediaType",
        id="form",
    ),
    pytest.param({"Authorization": "Basic dXNlcjpwdw=="}, 401, "Unauthorized", id="basic-auth"),
    pytest.param({"Authorization": "Bearer"}, 401, "Unauthorized", id="bearer-empty"),
]


@pytest.mark.parametrize(("headers", "status", "reason"), REQUESTS)
def test_bad_request_headers(
    server: ReportServer, headers: dict[str, str], status: int, reason: str
) -> None:
    body = {"reason": "UpdateSuccessful"}
    answer = call(server.url, body=body, token=OP, headers=headers)
    assert_error(answer, status, field=None, reason=reason)


def test_media_type_parameters_are_allowed(server: ReportServer) -> None:
    headers = {"Content-Type": "application/json; charset=utf-8"}
    answer = call(server.url, body={"reason": "UpdateSuccessful"}, token=OP, headers=headers)
    assert answer.status == 200


def test_missing_token_is_401_with_a_bearer_challenge(server: ReportServer) -> None:
    answer = call(server.url, body={"reason": "UpdateSuccessful"})
    assert_error(answer, 401, field=None, reason="Unauthorized")
    assert answer.headers["WWW-Authenticate"].startswith("Bearer")
    assert "invalid_token" not in answer.headers["WWW-Authenticate"]


def test_invalid_token_is_401_invalid_token(server: ReportServer, sink: CoreSink) -> None:
    answer = call(server.url, body={"reason": "UpdateSuccessful"}, token="not-a-known-token")
    assert_error(answer, 401, field=None, reason="Unauthorized")
    assert (
        answer.headers["WWW-Authenticate"] == 'Bearer realm="addon-status", error="invalid_token"'
    )
    assert sink.attempts == 0


def test_unknown_path_is_404(server: ReportServer) -> None:
    assert_error(call(server.url, path="/v1/report", body={}), 404, field=None, reason="NotFound")
    assert_error(call(server.url, "GET", "/"), 404, field=None, reason="NotFound")


@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE", "PATCH"])
def test_wrong_method_is_405_with_allow(server: ReportServer, method: str) -> None:
    answer = call(server.url, method, body={"reason": "UpdateSuccessful"}, token=OP)
    assert_error(answer, 405, field=None, reason="MethodNotAllowed")
    assert answer.headers["Allow"] == "POST"


def test_unknown_method_is_a_json_error(server: ReportServer) -> None:
    answer = call(server.url, "BREW", body=b"")
    assert answer.status == 501
    assert answer.body["error"]["code"] == 501


def test_body_over_the_limit_is_413_without_reading_it(server: ReportServer) -> None:
    """Announce 10 MB, send 1 KiB: the answer comes at once, so the server did not wait for the
    rest, and the connection is closed since its remainder was never read."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        head = (
            "POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {OP}\r\nContent-Length: 10000000\r\n\r\n"
        )
        sock.sendall(head.encode() + b" " * 1024)
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 413
        assert response.headers["Connection"] == "close"
        assert b'"RequestEntityTooLarge"' in response.read()


def test_body_just_under_the_limit_is_read(make_server: ServerFactory) -> None:
    server = make_server(max_body=200)
    body = {"reason": "UpdateSuccessful", "message": "x" * 150}
    assert call(server.url, body=body, token=OP).status == 200
    body["message"] = "x" * 200
    assert_error(
        call(server.url, body=body, token=OP), 413, field=None, reason="RequestEntityTooLarge"
    )


def test_chunked_body_is_411(server: ReportServer) -> None:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(
            b"POST /v1/reports HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + f"Authorization: Bearer {OP}\r\nTransfer-Encoding: chunked\r\n\r\n".encode()
            + b"2\r\n{}\r\n0\r\n\r\n"
        )
        response = http.client.HTTPResponse(sock)
        response.begin()
        assert response.status == 411
        assert response.headers["Connection"] == "close"


def test_a_refused_transition_is_a_200_verdict_naming_the_rule(server: ReportServer) -> None:
    """update-failure-blocks-available: the collector's ForwardSuccessful is refused, as a 200."""
    first = call(server.url, body={"collector": MC, "reason": "UpdateFailure"}, token=OP)
    assert first.status == 200
    assert first.body["verdict"] == "accepted"
    answer = call(
        server.url, body={"collector": MC, "reason": "ForwardSuccessful"}, token=TOKENS["mc"]
    )
    assert answer.status == 200
    assert answer.body["verdict"] == "refused"
    assert answer.body["state"] == "Degraded"
    assert answer.body["reason"] == "UpdateFailure"
    assert answer.body["rule"]
    assert "ForwardSuccessful" in answer.body["detail"]


def test_verdicts_come_from_the_core(server: ReportServer, sink: CoreSink) -> None:
    op = call(server.url, body={"reason": "UpdateSuccessful", "message": "deployed"}, token=OP)
    assert (op.status, op.body["verdict"], op.body["collector"]) == (200, "accepted", None)
    up = call(server.url, body={"collector": MC, "reason": "ForwardSuccessful"}, token=TOKENS["mc"])
    assert (up.body["verdict"], up.body["state"]) == ("accepted", "Available")
    again = call(
        server.url, body={"collector": MC, "reason": "ForwardSuccessful"}, token=TOKENS["mc"]
    )
    assert again.body["verdict"] == "heartbeat"
    down = call(server.url, body={"collector": MC, "reason": "ForwardFailure"}, token=TOKENS["mc"])
    assert (down.body["verdict"], down.body["state"]) == ("pending", "Available")
    assert down.body["deadline"] == "2025-01-01T12:10:00Z"
    assert [r.reason.value for r in sink.judged] == [
        "UpdateSuccessful",
        "ForwardSuccessful",
        "ForwardSuccessful",
        "ForwardFailure",
    ]


def test_not_the_leader_is_503_retry_after(server: ReportServer, sink: CoreSink) -> None:
    sink.leader = False
    answer = call(server.url, body={"reason": "UpdateSuccessful"}, token=OP)
    assert_error(answer, 503, field=None, reason="NotLeader")
    assert answer.headers["Retry-After"] == "1"


def test_a_sink_that_times_out_is_503(make_server: ServerFactory, sink: CoreSink) -> None:
    server = make_server(submit_timeout=0.05)
    sink.free.clear()
    answer = call(server.url, body={"reason": "UpdateSuccessful"}, token=OP)
    assert_error(answer, 503, field=None, reason="Timeout")
    assert answer.headers["Retry-After"] == "1"
    assert sink.judged == []


def test_a_failing_sink_is_500_and_logged(
    make_server: ServerFactory, caplog: pytest.LogCaptureFixture
) -> None:
    class Broken:
        def submit(self, report: object, *, timeout: float) -> Any:
            raise RuntimeError("the store is gone")

    server = make_server(sink=Broken())
    with caplog.at_level(logging.ERROR, logger="controller.report_api.server"):
        answer = call(server.url, body={"reason": "UpdateSuccessful"}, token=OP)
    assert_error(answer, 500, field=None, reason="InternalError")
    assert "the store is gone" in caplog.text


def test_keep_alive_survives_answers_and_closes_after_an_unread_body(server: ReportServer) -> None:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {OP}"}
    try:
        sockets = []
        for body in (b'{"reason": "UpdateSuccessful"}', b"{", b'{"reason": "UpdateSuccessful"}'):
            connection.request("POST", "/v1/reports", body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            assert response.headers.get("Connection") != "close"
            sockets.append(connection.sock)
        assert sockets[0] is sockets[1] is sockets[2]
        # 401 comes before the body is read: the server must close rather than misread it.
        connection.request(
            "POST", "/v1/reports", body=b"{}", headers={"Content-Type": "application/json"}
        )
        response = connection.getresponse()
        response.read()
        assert response.status == 401
        assert response.headers["Connection"] == "close"
    finally:
        connection.close()


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return value or 0.0


def test_metrics_count_requests_by_outcome(
    server: ReportServer, registry: CollectorRegistry
) -> None:
    url = server.url
    call(url, body={"reason": "UpdateSuccessful"}, token=OP)
    call(url, body={"collector": MC, "reason": "UpdateFailure"}, token=OP)
    call(url, body={"collector": MC, "reason": "ForwardSuccessful"}, token=TOKENS["mc"])
    call(url, body={"collector": MC, "reason": "UpdateFailure"}, token=OP)
    call(url, body={"collector": UWL, "reason": "UpdateFailure"}, token=TOKENS["mc"])
    call(url, body=b"{", token=OP)
    call(url, body={"reason": "UpdateSuccessful"})
    call(url, "GET", "/openapi.json")
    total = "addon_status_report_requests_total"
    assert sample(registry, total, outcome="accepted") == 2
    assert sample(registry, total, outcome="refused") == 1
    assert sample(registry, total, outcome="heartbeat") == 1
    assert sample(registry, total, outcome="forbidden") == 1
    assert sample(registry, total, outcome="bad_request") == 1
    assert sample(registry, total, outcome="unauthorized") == 1
    assert sample(registry, total, outcome="unavailable") == 0
    assert sample(registry, "addon_status_report_request_duration_seconds_count") == 7


def test_no_token_reaches_the_logs(
    server: ReportServer, sink: CoreSink, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        call(server.url, body={"reason": "UpdateSuccessful"}, token=OP)
        call(server.url, body={"collector": MC, "reason": "ForwardFailure"}, token=TOKENS["mc"])
        call(server.url, body={"collector": UWL, "reason": "UpdateFailure"}, token=TOKENS["uwl"])
        call(server.url, body={"reason": "UpdateSuccessful"}, token="wrong-tok-1b3d5f7a9c")
        call(server.url, path="/x?token=query-tok-8c6e4a2b0d", body=b"{", token=OP)
        sink.leader = False
        call(server.url, body={"reason": "UpdateSuccessful"}, token=OP)
    assert caplog.records, "the server logs its requests"
    logged = caplog.text + repr([vars(r) for r in caplog.records])
    for secret in [*TOKENS.values(), "wrong-tok-1b3d5f7a9c", "query-tok-8c6e4a2b0d"]:
        assert secret not in logged


def test_stop_ends_idle_keep_alive_connections(make_server: ServerFactory) -> None:
    server = make_server()
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        connection.request("GET", "/openapi.json")
        connection.getresponse().read()
        server.stop(grace=2.0)
        # The server closed the idle connection instead of waiting for its 10 s idle timeout.
        connection.sock.settimeout(1.0)
        assert connection.sock.recv(1) == b""
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((host, int(port)), timeout=1).close()
    finally:
        connection.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("report-api")]


@pytest.mark.parametrize("config", [Config.create(profile=ACM)], ids=["acm"])
def test_acm_profile_report_answers_use_acm_reason_names(server: ReportServer) -> None:
    """Issue item: under `--profile acm` the answers named reasons as the seed does. A report
    may use either spelling; the answer spells them as the CR does (`UpdateFailed`)."""
    failed = call(server.url, body={"reason": "UpdateFailure"}, token=TOKENS["operator"])
    assert failed.status == 200
    assert failed.body["reason"] == "UpdateFailed"
    refused = call(
        server.url,
        body={"collector": MC, "reason": "ForwardFailed"},
        token=TOKENS["mc"],
    )
    assert refused.body["verdict"] == "refused"
    assert "UpdateFailed" in refused.body["detail"], refused.body
    assert "UpdateFailure" not in refused.body["detail"] and "ForwardFailure" not in str(
        refused.body
    )
