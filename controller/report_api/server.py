"""The report API: `POST /v1/reports` over HTTP + JSON, in front of a `ReportSink`.

This module only moves bytes: it checks a request in a fixed order (path, method, token, media
type, size, JSON, report, grant), hands the report to the sink (the reconcile worker) and answers
the sink's verdict. It never judges a report itself. A refused transition is a normal 200; bad
input is a 4xx whose JSON error names the field; a sink that is not the leader, or too slow,
is a 503 with `Retry-After`. The standard library's HTTP server, with the framing rules of
`framing` at its door and the bounded worker pool of `controller.ops.serving`: measured against
uvicorn with Starlette, it answered faster and took less memory (README, "The report API").
With a `ServingCertificate` it speaks TLS, so that the reporters' bearer tokens do not cross
the pod network in clear.
"""

from __future__ import annotations

import ipaddress
import logging
import socket

from controller.kube.runnable import Runnable
from controller.report_api.auth import (
    Authenticator,
    Authorizer,
)
from controller.report_api.connections import ReportHTTPServer
from controller.report_api.handler import ReportHandler, Service, encode
from controller.report_api.metrics import ReportMetrics
from controller.report_api.openapi import openapi_document
from controller.report_api.sink import (
    ReportSink,
)
from controller.report_api.tls import ServingCertificate, ServingCertificateError
from statemachines.config import Config
from statemachines.errors import ConfigError

__all__ = [
    "ReportMetrics",
    "ReportServer",
    "ReportSink",
    "ServingCertificate",
    "ServingCertificateError",
]

log = logging.getLogger(__name__)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ReportServer:
    """The report API on a background thread. `port=0` picks a free port (see `url`); with
    `tls`, HTTPS."""

    def __init__(
        self,
        sink: ReportSink,
        *,
        authenticator: Authenticator,
        authorizer: Authorizer,
        config: Config,
        host: str,
        port: int,
        metrics: ReportMetrics,
        max_body: int = 65536,
        submit_timeout: float = 3.0,
        tls: ServingCertificate | None = None,
        workers: int = 32,
    ) -> None:
        if authenticator.loopback_only and not _is_loopback(host):
            raise ConfigError(
                f"insecure mode serves only on a loopback address (127.0.0.1, ::1, localhost), "
                f"not {host!r}: use a token authenticator to listen on {host!r}"
            )
        spec = encode(openapi_document(config, max_body=max_body))
        self._service = Service(
            sink, authenticator, authorizer, config, metrics, max_body, submit_timeout, spec
        )
        self._address = (host, port)
        self._tls = tls
        self._workers = workers
        self._server: ReportHTTPServer | None = None
        self._runner: Runnable | None = None

    def start(self) -> None:
        if self._server is not None:
            raise RuntimeError("the report server is already running")
        host = self._address[0]
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        try:
            server = ReportHTTPServer(
                self._address,
                ReportHandler,
                self._service,
                family=family,
                tls=self._tls,
                workers=self._workers,
            )
        except OSError as error:
            raise ConfigError(f"cannot listen on {host}:{self._address[1]}: {error}") from error
        self._server = server
        self._runner = Runnable("report-api", server.serve_forever, server.shutdown)
        self._runner.start()
        if self._tls is not None and self._tls.refresher is not None:
            self._tls.refresher.start()
        log.info("report API listening", extra={"url": self.url})

    def stop(self, *, grace: float = 2.0) -> None:
        """Stop accepting, let answers in flight finish (up to `grace`), close everything."""
        server, runner = self._server, self._runner
        if server is None or runner is None:
            return
        if self._tls is not None and self._tls.refresher is not None:
            self._tls.refresher.stop(grace)
        runner.stop(grace)  # no new connection is taken
        server.close_connections(grace)
        server.server_close()
        self._server = self._runner = None

    def problems(self, stuck_after: float) -> list[str]:
        """The accepting thread, a worker of its pool, or the certificate's refresher died."""
        server, runner = self._server, self._runner
        if server is None or runner is None:
            return []
        threads = [runner]
        if self._tls is not None and self._tls.refresher is not None:
            threads.append(self._tls.refresher)
        found = [problem for thread in threads if (problem := thread.problem()) is not None]
        return found + server.pool_problems()

    @property
    def listening(self) -> bool:
        """Started and not stopped: its socket takes connections."""
        return self._server is not None

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the report server is not running")
        host = self._address[0]
        shown = f"[{host}]" if ":" in host else host
        scheme = "http" if self._tls is None else "https"
        return f"{scheme}://{shown}:{self._server.server_port}"

    def __enter__(self) -> ReportServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
