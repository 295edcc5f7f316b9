"""The report API's TLS: a server context rebuilt when the mounted certificate rotates."""

from __future__ import annotations

import logging
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Literal

from controller.kube.runnable import Runnable
from statemachines.errors import ConfigError

__all__ = ["ServingCertificate", "ServingCertificateError"]

log = logging.getLogger(__name__)


class ServingCertificateError(ConfigError):
    """The certificate or key file cannot be used; `role` says which, for the caller to name."""

    def __init__(self, role: Literal["certificate", "key"], path: Path, problem: str) -> None:
        super().__init__(f"{role} {path}: {problem}")
        self.role = role
        self.problem = f"{path}: {problem}"


class ServingCertificate:
    """The TLS context of the server, rebuilt when the certificate or key file changes.

    cert-manager and OpenShift's service CA rotate the Secret; the kubelet swaps the mounted
    files. At most every `check_every` seconds a new connection looks at the files' stat; a
    change builds a new context for the connections after it. A pair caught half-written is
    kept out (the previous context stays) and tried again at the next check.
    """

    def __init__(
        self,
        cert_file: Path,
        key_file: Path,
        *,
        check_every: float = 2.0,
        refresher: Runnable | None = None,
    ) -> None:
        self._files = (Path(cert_file), Path(key_file))
        self.refresher = refresher  # what rewrites the files, run with the server (if any)
        self._check_every = check_every
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._context = _server_context(*self._files)  # at start: a bad file stops the start
        self._checked = time.monotonic()

    def context(self) -> ssl.SSLContext:
        with self._lock:
            now = time.monotonic()
            if now - self._checked >= self._check_every:
                self._checked = now
                self._reload_if_changed()
            return self._context

    def _reload_if_changed(self) -> None:
        try:
            stamp = self._stat()
        except ServingCertificateError:
            return  # mid-swap: look again later
        if stamp == self._stamp:
            return
        try:
            self._context = _server_context(*self._files)
        except ServingCertificateError as error:
            log.warning("serving certificate not reloaded", extra={"error": str(error)})
            return
        self._stamp = stamp
        log.info("serving certificate reloaded", extra={"file": str(self._files[0])})

    def _stat(self) -> tuple[tuple[int, int, int], ...]:
        stamps = []
        roles: tuple[Literal["certificate", "key"], ...] = ("certificate", "key")
        for role, path in zip(roles, self._files, strict=True):
            try:
                info = os.stat(path)  # follows the kubelet's ..data symlink
            except OSError as error:
                raise ServingCertificateError(role, path, error.strerror or "unreadable") from error
            stamps.append((info.st_ino, info.st_mtime_ns, info.st_size))
        return tuple(stamps)


def _server_context(cert_file: Path, key_file: Path) -> ssl.SSLContext:
    """TLS 1.2 or later; the certificate is checked alone first, so that errors name the file."""
    try:
        ssl.create_default_context(cafile=str(cert_file))  # parses the PEM certificates
    except (OSError, ssl.SSLError) as error:
        problem = _problem(error, "not a PEM certificate")
        raise ServingCertificateError("certificate", cert_file, problem) from error
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(str(cert_file), str(key_file))
    except (OSError, ssl.SSLError) as error:
        problem = _problem(error, "not a PEM private key of the certificate")
        raise ServingCertificateError("key", key_file, problem) from error
    return context


def _problem(error: OSError, unusable: str) -> str:
    if isinstance(error, ssl.SSLError):
        return f"{unusable} ({error.reason or error.library or 'unreadable'})"
    return error.strerror or unusable
