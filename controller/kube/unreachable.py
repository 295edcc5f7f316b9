"""Why a server did not answer, as a person says it: "connection refused to HOST:PORT", "no
route to HOST:PORT", "HOST: no such host", "certificate not trusted", "timed out" — read from
the exception chain urllib3 raises (its classes wrap the socket's OSError or the ssl module's
error), never a class name. What the OS or OpenSSL adds is kept after a colon where it helps
(the certificate's verify message), not relied on."""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

from urllib3.exceptions import (
    ConnectTimeoutError,
    MaxRetryError,
    NameResolutionError,
    NewConnectionError,
    ProtocolError,
    ReadTimeoutError,
)

__all__ = ["unreachable"]

_NO_ROUTE = {errno.EHOSTUNREACH, errno.ENETUNREACH, errno.EHOSTDOWN, errno.ENETDOWN}
_RESET = {errno.ECONNRESET, errno.EPIPE, errno.ECONNABORTED}


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error and what it wraps: urllib3's `reason`, the ssl error inside SSLError's
    args, Python's cause and context; each once."""
    seen: set[int] = set()
    todo = [error]
    while todo:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        inner = [getattr(current, "reason", None), current.__cause__, current.__context__]
        inner += [a for a in current.args if isinstance(a, BaseException)]
        todo += [e for e in inner if isinstance(e, BaseException)]


def _where(error: BaseException) -> str:
    """HOST:PORT of the connection or pool the error names ("" when none does)."""
    for found in _chain(error):
        for holder in (getattr(found, "pool", None), getattr(found, "conn", None)):
            host, port = getattr(holder, "host", None), getattr(holder, "port", None)
            if host:
                return f"{host}:{port}" if port else str(host)
    return ""


def unreachable(error: BaseException) -> str:  # noqa: PLR0911 (one answer per cause)
    """A person's sentence for a failed connection or an answer that never came."""
    where = _where(error)
    to = f" to {where}" if where else ""
    found = list(_chain(error))
    for cause in found:
        if isinstance(cause, ssl.SSLCertVerificationError):
            said = cause.verify_message or ""
            return f"certificate not trusted{f' ({said})' if said else ''}{_at(where)}"
        if isinstance(cause, socket.gaierror | NameResolutionError):
            host = where.rsplit(":", 1)[0] if where else "the server's name"
            return f"{host}: no such host (the name does not resolve)"
        if isinstance(cause, ConnectionRefusedError) or _errno(cause) == errno.ECONNREFUSED:
            return f"connection refused{to}"
        if _errno(cause) in _NO_ROUTE:
            return f"no route{to}"
        if isinstance(cause, ConnectionResetError) or _errno(cause) in _RESET:
            return f"connection reset{_by(where)}"
    for cause in found:  # after the causes: urllib3's NewConnectionError is a ConnectTimeoutError
        if isinstance(cause, ConnectTimeoutError) and not isinstance(cause, NewConnectionError):
            return f"connecting{to} timed out"
        if isinstance(cause, ReadTimeoutError | TimeoutError):
            return f"no answer{_from(where)} in time"
        if isinstance(cause, ssl.SSLError):
            return f"TLS handshake failed{_at(where)}: {cause.reason or cause.strerror or cause}"
        if isinstance(cause, ProtocolError):
            return f"connection closed{_by(where)} before an answer"
    last = found[-1]
    text = last.strerror if isinstance(last, OSError) and last.strerror else str(last)
    if isinstance(error, MaxRetryError | NewConnectionError) and "Failed to" in text:
        text = "cannot connect"
    return f"{text}{_at(where)}" if where and where not in text else text


def _errno(error: BaseException) -> int | None:
    return error.errno if isinstance(error, OSError) else None


def _at(where: str) -> str:
    return f" at {where}" if where else ""


def _from(where: str) -> str:
    return f" from {where}" if where else ""


def _by(where: str) -> str:
    return f" by {where}" if where else ""
