"""The report API's one request, in a fixed order: path, method, token, media type, size,
JSON, report, grant; then the sink's verdict, or the error that names what is wrong
(`ReportServer` in `controller.report_api.server` serves it)."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, BinaryIO, ClassVar, cast
from urllib.parse import urlsplit

from controller.report_api.auth import (
    AuthenticationError,
    Authenticator,
    AuthorizationError,
    Authorizer,
    AuthUnavailableError,
    Identity,
)
from controller.report_api.connections import ReportHTTPServer
from controller.report_api.framing import HeaderLines, framing_problem
from controller.report_api.metrics import ReportMetrics
from controller.report_api.openapi import ERROR_REASONS, REPORTS_PATH, SPEC_PATH
from controller.report_api.payload import load_json
from controller.report_api.sink import (
    ReportSink,
    SinkNotLeaderError,
    SinkRejectedError,
    SinkUnavailableError,
)
from statemachines.config import Config
from statemachines.errors import ReportError
from statemachines.reports import Report, Verdict, parse_report

__all__ = ["ReportHandler", "Service", "encode"]

log = logging.getLogger("controller.report_api.server")  # one logger for the report API


_OUTCOME_OF_STATUS = {401: "unauthorized", 403: "forbidden", 500: "error", 503: "unavailable"}


class _RefusalError(Exception):
    """A request answered with an error body; raised by the checks, caught by the dispatcher."""

    def __init__(
        self,
        code: int,
        message: str,
        *,
        field: str | None = None,
        reason: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field or None
        self.reason = reason or ERROR_REASONS.get(code, ("Error", ""))[0]
        self.headers = dict(headers or {})

    @property
    def body(self) -> dict[str, Any]:
        fields = ("code", "reason", "field", "message")
        return {"error": {name: getattr(self, name) for name in fields}}


@dataclass(frozen=True, slots=True)
class _Answer:
    code: int
    payload: bytes  # JSON
    outcome: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Service:
    """What the handlers share: the collaborators and the limits."""

    sink: ReportSink
    authenticator: Authenticator
    authorizer: Authorizer
    config: Config
    metrics: ReportMetrics
    max_body: int
    submit_timeout: float
    spec: bytes


class ReportHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a reporter's connection pool reuses sockets
    server_version = "addon-status"
    timeout = 10.0  # an idle keep-alive connection, or a slow body, holds a thread no longer
    # Headers and body leave in two writes; with Nagle on, the body waits ~40 ms for the
    # client's delayed ACK, which capped the API at ~21 reports per second.
    disable_nagle_algorithm = True

    _ROUTES: ClassVar[dict[str, str]] = {REPORTS_PATH: "POST", SPEC_PATH: "GET"}
    _answered = False  # a request was answered on this connection

    def version_string(self) -> str:
        return self.server_version  # no Python version in the Server header

    @property
    def service(self) -> Service:
        return cast(Service, cast(ReportHTTPServer, self.server).service)

    def handle_one_request(self) -> None:
        """After the first request, wait for the next one as a reclaimable, idle connection;
        with connections waiting for a worker, end this one instead."""
        server = cast(ReportHTTPServer, self.server)
        if self._answered:
            if server.crowded():
                self.close_connection = True
                return
            with server.reclaimable(self.connection):
                try:
                    next_request = cast(io.BufferedReader, self.rfile).peek(1)
                except OSError:  # the idle timeout, or reclaimed
                    next_request = b""
            if not next_request:
                self.close_connection = True
                return
        self._answered = True
        super().handle_one_request()

    def parse_request(self) -> bool:
        """The standard parse, then the framing rules of `framing`: a violation is a 400."""
        stream = self.rfile
        recorder = HeaderLines(cast(BinaryIO, stream))
        self.rfile = cast(Any, recorder)
        try:
            parsed = super().parse_request()
        finally:
            self.rfile = stream
        if not parsed:
            return False
        problem = framing_problem(recorder.lines, self.headers)
        if problem is None:
            return True
        log.info("report API request refused at the door", extra={"problem": problem})
        self.close_connection = True
        self.send_error(400, problem)
        return False

    def do_GET(self) -> None:
        self._dispatch()

    # The methods of RFC 9110, PATCH and QUERY are routed: a path that does not take one is a
    # 405; other methods are unknown (501).
    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET  # noqa: N815
    do_TRACE = do_CONNECT = do_QUERY = do_GET  # noqa: N815

    def _dispatch(self) -> None:
        started = time.perf_counter()
        self._body_read = False
        path = urlsplit(self.path).path
        try:
            answer = self._route(path)
        except _RefusalError as refusal:
            outcome = _OUTCOME_OF_STATUS.get(refusal.code, "bad_request")
            answer = _Answer(refusal.code, encode(refusal.body), outcome, refusal.headers)
            log.info(
                "report API request refused",
                extra={"path": path, "code": refusal.code, "field": refusal.field},
            )
        self._send_json(answer.code, answer.payload, answer.headers)
        if path == REPORTS_PATH:
            self.service.metrics.observe(answer.outcome, time.perf_counter() - started)

    def _route(self, path: str) -> _Answer:
        allowed = self._ROUTES.get(path)
        if allowed is None:
            raise _RefusalError(404, f"no such path {path!r}; reports go to POST {REPORTS_PATH}")
        if self.command != allowed:
            raise _RefusalError(
                405, f"{path} takes {allowed}, not {self.command}", headers={"Allow": allowed}
            )
        if path == SPEC_PATH:
            return _Answer(200, self.service.spec, "spec")
        return self._submit_report()

    def _submit_report(self) -> _Answer:
        identity = self._authenticate()
        raw = self._read_json()
        try:
            report = parse_report(raw, self.service.config)
        except ReportError as error:
            raise _RefusalError(422, error.problem, field=error.field) from error
        try:
            self.service.authorizer.authorize(identity, report)
        except AuthorizationError as error:
            raise _RefusalError(403, str(error), field=error.field) from error
        verdict = self._judge(report)
        about: dict[str, str | None] = {"identity": identity.username}
        about |= {
            "collector": report.collector,
            "reason": self.service.config.profile.name_of(report.reason),
        }
        log.info("report judged", extra=about | {"verdict": verdict.kind.value})
        answer = verdict.to_api(self.service.config.profile)
        return _Answer(200, encode(answer), verdict.kind.value)

    def _authenticate(self) -> Identity:
        header = self.headers.get("Authorization")
        token = None
        if header is not None:
            scheme, _, credentials = header.strip().partition(" ")
            token = credentials.strip() if scheme.lower() == "bearer" else None
            if not token:
                raise _RefusalError(
                    401, "Authorization must be `Bearer <token>`", headers=_CHALLENGE
                )
        try:
            return self.service.authenticator.authenticate(token)
        except AuthenticationError as error:
            headers = _INVALID_TOKEN if error.invalid_token else _CHALLENGE
            raise _RefusalError(401, str(error), headers=headers) from None
        except AuthUnavailableError as error:
            raise _RefusalError(503, str(error), headers=_RETRY) from None

    def _read_json(self) -> object:
        media = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        if media != "application/json":
            raise _RefusalError(415, f"the body must be application/json, not {media or 'untyped'}")
        if self.headers.get("Transfer-Encoding") is not None:
            raise _RefusalError(411, "send the body with a Content-Length, not chunked")
        length = _content_length(self.headers.get("Content-Length"))
        if length > self.service.max_body:
            raise _RefusalError(413, f"the body is {length} bytes; at most {self.service.max_body}")
        body = self.rfile.read(length)
        self._body_read = True
        if len(body) < length:
            raise _RefusalError(400, "the body ended before Content-Length bytes")
        try:
            return load_json(body)
        except (ValueError, RecursionError) as error:
            raise _RefusalError(400, f"the body is not valid JSON: {error}") from error

    def _judge(self, report: Report) -> Verdict:
        try:
            return self.service.sink.submit(report, timeout=self.service.submit_timeout)
        except SinkRejectedError as error:
            raise _RefusalError(422, str(error)) from error
        except SinkNotLeaderError as error:
            message = str(error) or "not the leader"
            raise _RefusalError(503, message, reason="NotLeader", headers=_ELSEWHERE) from error
        except SinkUnavailableError as error:
            reason = "Timeout" if error.timeout else None
            raise _RefusalError(503, str(error), reason=reason, headers=_RETRY) from error
        except Exception as error:
            log.exception("the report sink failed")
            raise _RefusalError(500, "the controller failed to judge the report") from error

    def _send_json(self, code: int, payload: bytes, headers: Mapping[str, str]) -> None:
        # A body we did not read would be taken for the next request: close instead. With
        # connections waiting for a worker, this one makes room.
        close = self.close_connection or (not self._body_read and self._announced_body())
        close = close or cast(ReportHTTPServer, self.server).crowded()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.send_header("Cache-Control", "no-store")
        for name, value in headers.items():
            self.send_header(name, value)
        if headers.get("Connection") == "close":
            self.close_connection = True
        elif close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _announced_body(self) -> bool:
        headers = getattr(self, "headers", None)  # None: the request line itself was bad
        if headers is None or headers.get("Transfer-Encoding") is not None:
            return True
        return (headers.get("Content-Length") or "0").strip() != "0"

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own errors (bad request line, unknown method) in our JSON."""
        self._body_read = False
        refusal = _RefusalError(code, message or explain or "the request is malformed")
        self._send_json(code, encode(refusal.body), {})

    def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
        """Silent: `_dispatch` logs what matters, and the request line may carry a query."""

    def log_message(self, format: str, *args: Any) -> None:
        log.warning("report API: " + format, *args)


_CHALLENGE = {"WWW-Authenticate": 'Bearer realm="addon-status"'}
_INVALID_TOKEN = {"WWW-Authenticate": 'Bearer realm="addon-status", error="invalid_token"'}
_RETRY = {"Retry-After": "1"}
# A follower closes the connection, so that the client's retry opens a new one, which the
# Service may balance to the leader (both replicas are ready).
_ELSEWHERE = {**_RETRY, "Connection": "close"}


def _content_length(value: str | None) -> int:
    if value is None:
        raise _RefusalError(411, "a Content-Length is required")
    text = value.strip()
    if not text.isdigit():
        raise _RefusalError(400, f"Content-Length {value!r} is not a byte count")
    return int(text)


def encode(body: Mapping[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
