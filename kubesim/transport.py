"""HTTP/1.1 plumbing under the API server: a threading server that knows its connections (so
stopping it really cuts them), optionally over TLS with client certificates (kube-apiserver's
`--tls-cert-file`, `--tls-private-key-file`, `--client-ca-file`), request bodies within
kube-apiserver's size limit, JSON answers, and chunked streams for watches."""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import format_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Final

import yaml

from kubesim.codec import decode_json, now
from kubesim.errors import APIError, bad_request, unsupported_media_type
from kubesim.fields import go_quote
from kubesim.protobuf import PROTOBUF, decode_protobuf
from kubesim.yaml_body import YAMLBodyError, load_yaml

__all__ = ["MAX_BODY", "HTTPServer", "Handler", "ServingTLS", "accepts_json"]

_log = logging.getLogger(__name__)
MAX_BODY: Final = 3 * 1024 * 1024  # kube-apiserver's MaxRequestBodyBytes
_HANDSHAKE_TIMEOUT: Final = 10.0


@dataclass(frozen=True)
class ServingTLS:
    """The serving certificate and, optionally, the CA whose client certificates authenticate
    a caller (as kube-apiserver's `--client-ca-file`: the subject's CN is the user, each O a
    group). The files are read once, at start."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None = None

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        if self.client_ca_file is not None:
            context.load_verify_locations(self.client_ca_file)
            context.verify_mode = ssl.CERT_OPTIONAL  # a token may authenticate instead
        return context


class HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True  # a restart binds the same port while old sockets linger

    def __init__(
        self,
        address: tuple[str, int],
        serve: Callable[[Handler], None],
        tls: ssl.SSLContext | None = None,
    ) -> None:
        self.serve = serve
        self._tls = tls
        self._connections: set[socket.socket] = set()
        self._connections_lock = threading.Lock()
        super().__init__(address, Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        connection, address = super().get_request()
        # headers and body go out in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK add 40 ms to every answer
        connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._tls is not None:  # the handshake runs on the connection's own thread
            connection = self._tls.wrap_socket(
                connection, server_side=True, do_handshake_on_connect=False
            )
        return connection, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        _log.debug("apiserver: connection from %s failed", client_address, exc_info=True)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._connections_lock:
            self._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self._connections_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def cut_connections(self) -> None:
        """Idle keep-alive connections would otherwise outlive the server."""
        with self._connections_lock:
            connections = list(self._connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: HTTPServer

    def date_time_string(self, timestamp: float | None = None) -> str:
        """The `Date` header on the server's clock (`APIServer(clock=...)`), as a client that
        measures ages on the server's time reads it."""
        moment = now() if timestamp is None else datetime.fromtimestamp(timestamp, UTC)
        return format_datetime(moment, usegmt=True)

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(_HANDSHAKE_TIMEOUT)
            self.request.do_handshake()
            self.request.settimeout(None)
        super().setup()

    def client_certificate(self) -> tuple[str, tuple[str, ...]] | None:
        """The user (CN) and groups (O) of a verified client certificate, if one was sent."""
        if not isinstance(self.connection, ssl.SSLSocket):
            return None
        subject: Any = (self.connection.getpeercert() or {}).get("subject", ())
        fields = [(str(key), str(value)) for rdn in subject for key, value in rdn]
        user = next((value for key, value in fields if key == "commonName"), None)
        if user is None:
            return None
        return user, tuple(value for key, value in fields if key == "organizationName")

    def do_GET(self) -> None:
        self.server.serve(self)

    def do_POST(self) -> None:
        self.server.serve(self)

    def do_PUT(self) -> None:
        self.server.serve(self)

    def do_PATCH(self) -> None:
        self.server.serve(self)

    def do_DELETE(self) -> None:
        self.server.serve(self)

    def log_message(self, format: str, *args: Any) -> None:
        _log.debug("%s %s", self.address_string(), format % args)

    def read_body(self) -> bytes:
        """The body, at most kube-apiserver's MaxRequestBodyBytes whether its length is given
        or chunked (a 413 past it, and the connection closed with the rest unread)."""
        if "chunked" not in self.headers.get("Transfer-Encoding", "").lower():
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                raise self._too_large()
            return self.rfile.read(length) if length else b""
        chunks: list[bytes] = []
        read = 0
        while True:
            line = self.rfile.readline(1024).split(b";")[0].strip()
            try:
                size = int(line or b"0", 16)
            except ValueError:
                self.close_connection = True
                raise bad_request("malformed chunked encoding") from None
            if size == 0:
                self.rfile.readline(1024)
                return b"".join(chunks)
            read += size
            if read > MAX_BODY:
                raise self._too_large()
            chunks.append(self.rfile.read(size))
            self.rfile.readline(1024)

    def body_pending(self) -> bool:
        return "chunked" in self.headers.get("Transfer-Encoding", "").lower() or bool(
            int(self.headers.get("Content-Length") or 0)
        )

    def _too_large(self) -> APIError:
        self.close_connection = True
        return APIError(
            413, "RequestEntityTooLarge", f"Request entity too large: limit is {MAX_BODY}"
        )

    def object_body(self, body: bytes, kind: str) -> Any:
        """The request's object, from JSON or YAML (the media types kube-apiserver decodes
        besides protobuf), or protobuf for the kinds `kubesim.protobuf` knows; `kind` is the
        type the resource decodes into, named in a YAML body's refusal."""
        media = self.headers.get("Content-Type", "application/json").split(";")[0]
        media = media.strip().lower()
        try:
            if media in ("application/json", ""):
                return decode_json(body or b"null")
            if media == "application/yaml":
                return _yaml(body, kind)
            if media == PROTOBUF and (decoded := decode_protobuf(body)) is not None:
                return decoded
        except ValueError as exc:
            raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None
        raise unsupported_media_type(["application/json", "application/yaml", PROTOBUF])

    def _common_headers(self, code: int) -> None:
        self.send_response(code)
        self.send_header("Audit-Id", str(uuid.uuid4()))
        self.send_header("Cache-Control", "no-cache, private")
        self.send_header("Content-Type", "application/json")

    def send_json(
        self,
        code: int,
        data: bytes,
        *,
        headers: Mapping[str, str] | None = None,
        warnings: Sequence[str] = (),
    ) -> None:
        try:
            self._common_headers(code)
            for warning in warnings:
                self.send_header("Warning", f"299 - {go_quote(warning)}")
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True

    def start_chunked(self) -> None:
        self._common_headers(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def end_chunked(self, *, keep_alive: bool) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.close_connection = not keep_alive

    def cut(self) -> None:
        """End the connection without ending the stream: what the client sees of a network
        failure."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _yaml(body: bytes, kind: str) -> Any:
    """YAMLToJSON's failure is the decoder's, summarised as the handler's transformDecodeError
    does it (a non-JSON body is shown as the hex of its first 30 bytes)."""
    try:
        return load_yaml(body)
    except (YAMLBodyError, yaml.YAMLError) as exc:
        reason = str(exc) if isinstance(exc, YAMLBodyError) else f"yaml: {exc}".replace("\n", " ")
        head = body[:30].decode("utf-8", "replace") if body[:1] == b"{" else body[:30].hex()
        summary = head + (" ..." if len(body) > 30 else "") if body else "<empty>"
        raise bad_request(
            f"the object provided is unrecognized (must be of type {kind}): {reason} ({summary})"
        ) from None


def accepts_json(accept: str | None) -> bool:
    if not accept:
        return True
    return any(
        part.split(";")[0].strip() in ("application/json", "*/*", "application/*")
        for part in accept.split(",")
    )
