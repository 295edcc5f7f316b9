"""What an API server answered: its body, read whole within bounds, and its failures as the
error tree of `controller.kube.api`, with the server's own words where they cannot echo a
secret. A server is not trusted to be kube-apiserver: it may trickle, never end, claim 2 GiB
or compress unasked."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final

from urllib3 import BaseHTTPResponse

from controller.kube.api import KubeError, error_for
from controller.kube.connection import Connection
from controller.kube.unreachable import unreachable

__all__ = [
    "MAX_ANSWER",
    "READ",
    "parse_retry_after",
    "read_answer",
    "refused",
    "too_late",
    "unanswered",
]

_DETAIL_LIMIT: Final = 200
_FORBIDDEN_LIMIT: Final = 4096
# The largest answer read: a page of 500 objects is a few MiB; a pod's memory is 256 MiB.
MAX_ANSWER: Final = 64 << 20
READ: Final = 64 << 10  # bytes per read: the deadline is checked between reads


def parse_retry_after(value: str | None, *, now: datetime) -> float | None:
    """`Retry-After` as seconds (what kube-apiserver sends) or as an HTTP date; None when
    absent or unreadable, so a garbled header falls back to plain backoff."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():  # delay-seconds: ASCII digits only (not "²")
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max((moment - now).total_seconds(), 0.0)


def read_answer(response: BaseHTTPResponse, what: str, *, deadline: float) -> bytes:
    """The whole answer, read before `deadline` (a monotonic time) and within `MAX_ANSWER`
    bytes, else a KubeError: a server trickling or streaming without end must not hold a
    caller or fill its memory. Uncompressed only: the client never asks for an encoding
    (http.client sends `Accept-Encoding: identity`), so a compressed answer is refused unread
    rather than inflated. The connection is released when the answer was read whole, closed
    otherwise."""
    whole = False
    try:
        encoding = (response.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding != "identity":
            raise KubeError(f"{what}: the API server answered in {encoding!r}, not asked for")
        length = response.headers.get("Content-Length") or ""
        if length.isascii() and length.isdigit() and int(length) > MAX_ANSWER:
            raise KubeError(f"{what}: the API server's answer is over {MAX_ANSWER >> 20} MiB")
        answer = bytearray()
        while chunk := response.read1(READ, decode_content=False):
            answer += chunk
            if len(answer) > MAX_ANSWER:
                raise KubeError(f"{what}: the API server's answer is over {MAX_ANSWER >> 20} MiB")
            if time.monotonic() > deadline:
                break
        if time.monotonic() > deadline:  # also an answer the deadline cut short
            raise too_late(what)
        whole = True
        return bytes(answer)
    finally:
        if not whole:
            response.close()  # unread: the connection cannot go back to the pool
        response.release_conn()


def too_late(what: str) -> KubeError:
    """The call's deadline passed before its answer was read whole."""
    return error_for(f"{what}: the API server's answer took too long", status=None)


def unanswered(error: Exception, what: str) -> KubeError:
    """No answer: what went wrong as a person says it ("connection refused to HOST:PORT"),
    which holds no header, so no token."""
    return error_for(f"{what}: {unreachable(error)}", status=None)


def refused(
    response: BaseHTTPResponse,
    answer: bytes,
    what: str,
    *,
    connection: Connection,
    quote_server: bool = True,
) -> KubeError:
    """The server's answer as one of the tree, with its message (never the headers, which
    carry the bearer token); the server's own words only where they cannot echo a secret."""
    status = response.status
    if status == 401:
        connection.forget_credential()  # an exec plugin's token expired early: run it again
    body = _status_body(answer) if quote_server else {}
    retry_after = parse_retry_after(response.headers.get("Retry-After"), now=datetime.now(UTC))
    details = body.get("details")
    if retry_after is None and isinstance(details, dict):
        seconds = details.get("retryAfterSeconds")
        retry_after = float(seconds) if isinstance(seconds, int) and seconds > 0 else None
    message = body.get("message") if isinstance(body.get("message"), str) else response.reason
    detail = f"{what}: {status} {message or ''}".strip()
    # a 403's sentence names who was refused what, where: kept whole (within a bound no real
    # one reaches); other answers' messages are cut, they may quote a whole object back
    cut = _FORBIDDEN_LIMIT if status == 403 else _DETAIL_LIMIT
    detail = detail[: len(what) + cut]
    return error_for(detail, status=status, retry_after=retry_after)


def _status_body(raw: Any) -> dict[str, Any]:
    """The `Status` object a Kubernetes API server sends with a failure, if it is one."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8", "replace")
    if not isinstance(raw, str):
        return {}
    try:
        decoded = json.loads(raw)
    except ValueError:
        return {}
    return decoded if isinstance(decoded, dict) else {}
