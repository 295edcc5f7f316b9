"""The report API's connections: a bounded pool of workers and, with a certificate, TLS."""

from __future__ import annotations

import logging
import socket
import ssl
from http.server import BaseHTTPRequestHandler, HTTPServer
from socketserver import TCPServer
from typing import Any

from controller.ops.serving import BoundedPool
from controller.report_api.tls import ServingCertificate

__all__ = ["ReportHTTPServer"]

log = logging.getLogger("controller.report_api.server")  # one logger for the report API


class ReportHTTPServer(BoundedPool, HTTPServer):
    """Serves connections with a bounded pool of workers; with `tls`, after a handshake."""

    worker_name = "report-api-worker"

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        service: object,
        *,
        family: int,
        tls: ServingCertificate | None,
        workers: int,
    ) -> None:
        self.address_family = family
        self.service = service
        self.tls = tls
        self.workers = workers
        super().__init__(address, handler)

    def server_bind(self) -> None:
        # HTTPServer would resolve the host's FQDN here: a DNS lookup nobody needs.
        TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection that broke mid-request, or a bug: logged, not printed to stderr."""
        log.warning("report API connection failed", exc_info=True)

    def serve_connection(self, request: Any, client_address: Any) -> None:
        if self.tls is None:
            self.finish_request(request, client_address)
            return
        connection = self._handshake(request)
        if connection is not None:
            try:
                self.finish_request(connection, client_address)
            finally:
                self.shutdown_request(connection)

    def _handshake(self, request: socket.socket) -> ssl.SSLSocket | None:
        """TLS on the connection's worker; a client that stalls it is reclaimable."""
        assert self.tls is not None
        try:
            wrapped = self.tls.context().wrap_socket(
                request, server_side=True, do_handshake_on_connect=False
            )
        except OSError:  # the client left already
            return None
        self.replace_connection(wrapped)
        wrapped.settimeout(self.first_byte_timeout)
        try:
            with self.reclaimable(wrapped, after=self.reclaim_new_after):
                wrapped.do_handshake()
        except (OSError, ssl.SSLError) as error:  # plain HTTP, an untrusting client, a timeout
            log.info("report API TLS handshake failed", extra={"error": str(error)})
            self.shutdown_request(wrapped)
            return None
        return wrapped
