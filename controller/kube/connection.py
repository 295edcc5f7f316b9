"""One API server as the seam reaches it: its URL, how to prove who we are, whom to trust, and a
pool of HTTP connections (urllib3). What a kubeconfig or a pod's service account says,
spoken directly, as client-go's `rest.Config` and transport do:

- credentials: a bearer token, a token file read again whenever it changes (the kubelet
  rotates a projected service-account token), a client certificate and key, or an `exec`
  credential plugin (run when its credential is missing or expired; `client.authentication.k8s.io`
  v1 or v1beta1);
- trust: a CA (file or data), the server name the certificate must carry, or none at all
  (`insecure-skip-tls-verify`);
- the way: a proxy (`proxy-url`, else the environment's: `proxy.py`), its credentials from
  its URL;
- every request bounded by its timeout; retried here only once, where a pooled connection
  turned out closed before the request could change anything (the callers' loops retry the
  rest with backoff and `Retry-After`).

The project does not use the `kubernetes` package for this: importing it costs a quarter of a
second and 13 MiB in every process, for a request path the seam already drives itself.
"""

from __future__ import annotations

import base64
import contextlib
import os
import ssl
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

import urllib3
from urllib3 import HTTPHeaderDict

from controller.kube.api import ConnectionSetupError
from controller.kube.deadlines import POOL_CLASSES, remaining
from controller.kube.exec_plugin import ExecPlugin, plugin_of, run_plugin
from controller.kube.proxy import proxy_for

__all__ = ["Connection", "ConnectionSetupError", "ExecPlugin", "Timeout", "plugin_of"]

Timeout = float | tuple[float, float]  # (connect, read) or both
_USER_AGENT: Final = "addon-status"


@dataclass
class _Credential:
    """What an exec plugin last printed, until it expires."""

    token: str | None = None
    certificate: tuple[bytes, bytes] | None = None  # (certificate, key), PEM
    expires: datetime | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)


class Connection:
    """Requests to one API server. Thread-safe; `close()` ends the pool."""

    def __init__(
        self,
        server: str,
        *,
        token: str | None = None,
        token_file: Path | None = None,
        exec_plugin: ExecPlugin | None = None,
        ca_file: Path | None = None,
        ca_data: bytes | None = None,
        cert_file: Path | None = None,
        key_file: Path | None = None,
        cert_data: bytes | None = None,
        key_data: bytes | None = None,
        insecure: bool = False,
        server_name: str | None = None,
        proxy: str | None = None,
        impersonate: tuple[tuple[str, str], ...] = (),
        pool_size: int = 10,  # the watches a process holds open at once, and its calls
    ) -> None:
        parts = urlsplit(server)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectionSetupError(f"{server!r} is not an http(s) server URL")
        self.server = server.rstrip("/")
        self._token, self._token_file = token, token_file
        self._impersonate = impersonate  # Impersonate-* (name, value) pairs, sent with each
        self._file_token: tuple[tuple[int, int, int], str] | None = None  # (stat, token)
        self._exec = exec_plugin
        # What a plugin with provideClusterInfo is told (client-go's ExecCredential Cluster).
        self._cluster_info = _cluster_info(
            self.server, ca_file, ca_data, server_name, insecure, proxy
        )
        self._exec_credential = _Credential()
        self._lock = threading.Lock()
        # One more try, and only where it cannot repeat a change: a pooled keep-alive
        # connection the server has closed meanwhile fails before anything was sent (connect)
        # or before an answer to an idempotent method (read). Everything else is the callers',
        # a 429 or 503 with its Retry-After included: their backoff honours it.
        once = urllib3.Retry(
            total=1, connect=1, read=1, status=0, other=0, redirect=0,
            respect_retry_after_header=False, raise_on_status=False,
        )  # fmt: skip
        options: dict[str, Any] = {"maxsize": pool_size, "retries": once, "block": False}
        if parts.scheme == "https":
            options["ssl_context"] = _tls_context(
                ca_file, ca_data, cert_file, key_file, cert_data, key_data, insecure
            )
            if insecure:
                options["cert_reqs"] = ssl.CERT_NONE
                options["assert_hostname"] = False
            elif server_name:
                options["server_hostname"] = server_name
        self._via = proxy_for(server, proxy, os.environ)
        self._pool = _pool(self._via, options)
        # What a pool for a plugin's client certificate is built from (the certificate added).
        self._options, self._trust = options, (ca_file, ca_data, insecure)

    def __repr__(self) -> str:
        return f"Connection({self.server!r})"  # never a credential

    def request(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]] = (),
        body: bytes | None = None,
        content_type: str = "application/json",
        timeout: Timeout = 10.0,
        stream: bool = False,
    ) -> urllib3.BaseHTTPResponse:
        """One request; with `stream`, the response is left unread (a watch). Raises urllib3's
        errors as they come (no retry)."""
        headers = HTTPHeaderDict({"Accept": "application/json", "User-Agent": _USER_AGENT})
        for name, value in self._impersonate:
            headers.add(name, value)  # a group a header, as client-go sends them
        if body is not None:
            headers["Content-Type"] = content_type
        connect, read = timeout if isinstance(timeout, tuple) else (timeout, timeout)
        left = remaining()  # a plugin runs within the call's deadline, else within a read's
        authorization = self._authorization(read if left is None else left)
        if authorization:
            headers["Authorization"] = authorization
        url = self.server + path + (f"?{urlencode(list(query))}" if query else "")
        return self._pool.request(
            method,
            url,
            body=body,
            headers=headers,
            timeout=urllib3.Timeout(connect=connect, read=read),
            preload_content=not stream,
            redirect=False,
        )

    def forget_credential(self) -> None:
        """The server refused the credential (401): an exec plugin runs again next time."""
        with self._exec_credential.lock:
            self._exec_credential.token = self._exec_credential.certificate = None

    def close(self) -> None:
        self._pool.clear()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _authorization(self, budget: float) -> str | None:
        token = self._token or self._from_file() or self._from_plugin(budget)
        if token and not (token.isascii() and token.isprintable()):  # never a header to split
            raise ConnectionSetupError("the bearer token holds a line break or control character")
        return f"Bearer {token}" if token else None

    def _from_file(self) -> str | None:
        """The token file's content, read again when its identity, mtime or size changed (the
        kubelet swaps a projected token's symlink); the last one while it is missing."""
        if self._token_file is None:
            return None
        try:
            stat = self._token_file.stat()
        except OSError:
            return self._file_token[1] if self._file_token else None  # mid-rotation: keep
        seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if self._file_token is None or self._file_token[0] != seen:
                with contextlib.suppress(OSError):
                    self._file_token = (seen, self._token_file.read_text("utf-8").strip())
            return self._file_token[1] if self._file_token else None

    def _from_plugin(self, budget: float) -> str | None:
        if self._exec is None:
            return None
        credential = self._exec_credential
        with credential.lock:
            now = datetime.now(UTC)
            missing = credential.token is None and credential.certificate is None
            if missing or (credential.expires and credential.expires <= now):
                before = credential.certificate
                credential.token, credential.certificate, credential.expires = run_plugin(
                    self._exec, self._cluster_info, budget
                )
                if credential.certificate is not None and credential.certificate != before:
                    self._present(self._exec.command, credential.certificate)
            return credential.token

    def _present(self, command: str, certificate: tuple[bytes, bytes]) -> None:
        """Use a plugin's client certificate from now on: a new pool whose TLS context holds
        it (client-go rotates its transport's certificate so)."""
        if "ssl_context" not in self._options:
            raise ConnectionSetupError(
                f"exec plugin {command} returned a client certificate, which needs an https server"
            )
        ca_file, ca_data, insecure = self._trust
        context = _tls_context(ca_file, ca_data, None, None, *certificate, insecure)
        old, self._pool = self._pool, _pool(self._via, {**self._options, "ssl_context": context})
        old.clear()


def _pool(proxy: str | None, options: dict[str, Any]) -> urllib3.PoolManager:
    """The pools; their connections register with the running call's deadline (deadlines.py)."""
    if proxy is None:
        manager = urllib3.PoolManager(num_pools=2, **options)
    else:
        try:
            parsed = urllib3.util.parse_url(proxy)
            headers = urllib3.make_headers(proxy_basic_auth=parsed.auth) if parsed.auth else None
            manager = urllib3.ProxyManager(proxy, num_pools=2, proxy_headers=headers, **options)
        except (urllib3.exceptions.HTTPError, ValueError):  # never the URL: it may hold a password
            raise ConnectionSetupError(
                "the proxy URL is not an http(s) proxy (socks proxies are not supported)"
            ) from None
    manager.pool_classes_by_scheme = POOL_CLASSES
    return manager


def _tls_context(  # noqa: PLR0917 (the TLS settings, in kubeconfig's terms)
    ca_file: Path | None,
    ca_data: bytes | None,
    cert_file: Path | None,
    key_file: Path | None,
    cert_data: bytes | None,
    key_data: bytes | None,
    insecure: bool,
) -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif ca_file or ca_data:
            context = ssl.create_default_context(
                cafile=str(ca_file) if ca_file else None,
                cadata=ca_data.decode("ascii") if ca_data else None,
            )
        if cert_data or key_data:
            _load_key_pair(context, cert_data or b"", key_data or b"")
        elif cert_file or key_file:
            context.load_cert_chain(str(cert_file), str(key_file) if key_file else None)
    except (OSError, ssl.SSLError, UnicodeDecodeError, ValueError) as error:
        raise ConnectionSetupError(
            f"the TLS settings do not load: {type(error).__name__}"
        ) from None
    return context


def _load_key_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """`load_cert_chain` reads files only: the pair goes through a private file that is gone
    before this returns (nothing is left in the temporary directory)."""
    with tempfile.NamedTemporaryFile(prefix="addon-status-", suffix=".pem") as pem:
        os.chmod(pem.name, 0o600)
        pem.write(cert.rstrip(b"\n") + b"\n" + key)
        pem.flush()
        context.load_cert_chain(pem.name)


def _cluster_info(  # noqa: PLR0917 (the cluster's settings, in kubeconfig's terms)
    server: str,
    ca_file: Path | None,
    ca_data: bytes | None,
    server_name: str | None,
    insecure: bool,
    proxy: str | None,
) -> dict[str, Any]:
    if ca_data is None and ca_file is not None:
        with contextlib.suppress(OSError):  # a CA that does not load is refused with the TLS
            ca_data = ca_file.read_bytes()
    info: dict[str, Any] = {"server": server}
    if ca_data:
        info["certificate-authority-data"] = base64.b64encode(ca_data).decode("ascii")
    if server_name:
        info["tls-server-name"] = server_name
    if insecure:
        info["insecure-skip-tls-verify"] = True
    if proxy:
        info["proxy-url"] = proxy
    return info
