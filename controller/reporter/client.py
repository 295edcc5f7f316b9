"""The Python client of the report API, for collectors, the endpoint operator and the CLI.

One call, `ReportClient.report`, returns the verdict as the server sent it. It retries what the
server could not judge (connection errors, 502/503/504, honouring `Retry-After`) with urllib3's
`Retry`, but never waits without bound: every attempt has connect and read timeouts, and the call
as a whole a deadline that holds whatever the server does (a watchdog shuts the socket down when
it passes, so a server trickling one byte at a time cannot hold the caller), and an answer larger
than `ANSWER_LIMIT` is not read. Retrying is safe because a repeated report is a heartbeat. A 4xx
is not retried: it raises `ReportRejected` with the field the server named. Over https the server's
certificate is verified, hostname included, against `ca_file` or the system's CAs: a report
carries a bearer token, which must never reach a server that only claims to be the controller.
"""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import Callable
from typing import Any, Self
from urllib.parse import urlsplit

import urllib3
from urllib3.exceptions import HTTPError
from urllib3.util.retry import Retry

from controller.kube.deadlines import WatchedConnection, WatchedTLSConnection, within
from controller.kube.unreachable import unreachable
from statemachines.errors import AddonStatusError

__all__ = ["ANSWER_LIMIT", "ReportClient", "ReportRejected", "ReportUnavailable"]

_RETRIED_STATUS = frozenset({502, 503, 504})
# A verdict is a few hundred bytes; an answer beyond this is not the report API's.
ANSWER_LIMIT = 1 << 20


class ReportRejected(AddonStatusError):  # noqa: N818 (the server rejected it; not a failure of ours)
    """The server answered 4xx: the report, the token or the grant is wrong; do not retry."""

    def __init__(self, status: int, *, reason: str, field: str | None, message: str) -> None:
        where = f" ({field})" if field else ""
        super().__init__(f"{status} {reason}{where}: {message}")
        self.status = status
        self.reason = reason
        self.field = field
        self.message = message


class ReportUnavailable(AddonStatusError):  # noqa: N818 (a state of the server, not a bug)
    """No verdict within the deadline: the server is unreachable, not the leader, or failing."""


def _encoded(body: dict[str, Any]) -> bytes:
    """UTF-8 JSON, as short as the text: escaped as `\\uXXXX`, 6,000 emoji would take 72 KB
    and the report API would refuse the body (413) where the same text as UTF-8 (24 KB) is cut
    by the rules and kept. Text UTF-8 cannot encode (a lone surrogate) goes escaped, for the
    server to refuse naming the field."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":")).encode("ascii")


class _DeadlinePassedError(Exception):
    """Raised from inside urllib3's retry loop when the next attempt would start too late."""


class _DeadlineRetry(Retry):
    """urllib3's Retry, bounded by a monotonic deadline for the whole call."""

    deadline: float = float("inf")

    def new(self, **kw: Any) -> Self:
        renewed = super().new(**kw)
        renewed.deadline = self.deadline
        return renewed

    def sleep(self, response: urllib3.BaseHTTPResponse | None = None) -> None:
        wait = None
        if self.respect_retry_after_header and response is not None:
            wait = self.get_retry_after(response)
        if wait is None:
            wait = self.get_backoff_time()
        if time.monotonic() + wait >= self.deadline:
            raise _DeadlinePassedError(
                f"the next attempt would start after the deadline ({wait:g}s)"
            )
        if wait > 0:
            time.sleep(wait)


class ReportClient:
    """Reports reasons to one controller. `token` may be a callable, so that a projected service
    account token, which the kubelet rotates, is read afresh for every call.

    Raises ValueError for a URL that is not http(s), OSError for a `ca_file` that cannot be
    loaded (an https URL only; plain http ignores it).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | Callable[[], str] | None = None,
        timeout: float = 5.0,
        retries: int | None = None,
        backoff: float = 0.2,
        deadline: float = 30.0,
        ca_file: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"{url!r} is not an http(s) URL, e.g. http://127.0.0.1:8080")
        self._endpoint = url.rstrip("/").removesuffix("/v1/reports") + "/v1/reports"
        self._token = token
        # No single attempt may outlast the whole call.
        attempt = min(timeout, deadline)
        self._timeout = urllib3.Timeout(connect=attempt, read=attempt)
        # By default as many attempts as the deadline allows: a failover of a few seconds (503
        # and Retry-After from the replica that is not the leader yet) is ridden out.
        self._retries = 10_000 if retries is None else retries
        self._backoff = backoff
        self._deadline = deadline
        self._pool: urllib3.HTTPConnectionPool
        if parts.scheme == "https":
            # Verifies the chain and the hostname (or IP address) of the certificate.
            context = ssl.create_default_context(cafile=ca_file)
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            self._pool = urllib3.connection_from_url(url, maxsize=2, ssl_context=context)
            self._pool.ConnectionCls = WatchedTLSConnection
        else:
            self._pool = urllib3.connection_from_url(url, maxsize=2)
            self._pool.ConnectionCls = WatchedConnection

    def __repr__(self) -> str:
        return f"ReportClient({self._endpoint!r})"  # never the token

    def report(
        self,
        collector: str | None = None,
        *,
        reason: str,
        message: str | None = None,
        observed_generation: int | None = None,
        version: str | None = None,
    ) -> dict[str, Any]:
        """The verdict (`verdict`, `state`, `reason`, `detail`, `rule`...), refused ones included.

        Raises ReportRejected on a 4xx, ReportUnavailable when no verdict came in time.
        """
        body: dict[str, Any] = {"reason": reason}
        if message is not None:  # absent: a heartbeat keeps the collector's last message
            body["message"] = message
        if collector is not None:
            body["collector"] = collector
        if observed_generation is not None:
            body["observedGeneration"] = observed_generation
        if version is not None:  # with UpdateSuccessful only: the version the update installs
            body["version"] = version
        status, answer = self._post(_encoded(body))
        payload = _decode(answer)
        if 200 <= status < 300 and isinstance(payload, dict):
            return payload
        if 400 <= status < 500:
            raise _rejection(status, payload)
        raise ReportUnavailable(f"{self._endpoint} answered {status}: {_summary(payload)}")

    def close(self) -> None:
        self._pool.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, body: bytes) -> tuple[int, bytes]:
        """The status and the body of the answer, read within the deadline."""
        retry = _DeadlineRetry(
            total=self._retries,
            connect=self._retries,
            read=self._retries,
            status=self._retries,
            other=0,
            redirect=0,
            allowed_methods=frozenset({"POST"}),
            status_forcelist=_RETRIED_STATUS,
            backoff_factor=self._backoff,
            backoff_max=max(self._backoff, 5.0),
            raise_on_status=False,
            raise_on_redirect=False,
        )
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        token = (self._token() if callable(self._token) else self._token or "").strip()
        if token:
            if not (token.isascii() and token.isprintable()):
                # The HTTP library's own error would quote the header, token included.
                raise ValueError("the bearer token holds characters a header cannot carry")
            headers["Authorization"] = f"Bearer {token}"
        with within(self._deadline) as deadline:
            retry.deadline = deadline.at
            try:
                response = self._pool.urlopen(
                    "POST",
                    self._endpoint,
                    body=body,
                    headers=headers,
                    timeout=self._timeout,
                    retries=retry,
                    preload_content=False,
                )
                answer = response.read(ANSWER_LIMIT + 1)
                if deadline.fired:  # a body that ends with the connection was cut short
                    raise OSError("the deadline passed")
                if len(answer) > ANSWER_LIMIT:
                    response.close()  # the rest is never read
                    raise ReportUnavailable(
                        f"{self._endpoint} answered more than {ANSWER_LIMIT} bytes; not a verdict"
                    )
                response.release_conn()
                return response.status, answer
            except _DeadlinePassedError as error:
                raise ReportUnavailable(f"{self._endpoint}: gave up: {error}") from None
            except (HTTPError, OSError) as error:
                if deadline.fired:
                    raise ReportUnavailable(
                        f"{self._endpoint}: gave up: the deadline ({self._deadline:g}s) passed "
                        "before the answer was read"
                    ) from None
                raise ReportUnavailable(f"{self._endpoint}: {_cause(error)}") from None


def _decode(answer: bytes) -> object:
    try:
        return json.loads(answer)
    except ValueError:
        return None


def _rejection(status: int, payload: object) -> ReportRejected:
    error = payload.get("error") if isinstance(payload, dict) else None
    if not isinstance(error, dict):
        return ReportRejected(status, reason="Rejected", field=None, message=_summary(payload))
    field = error.get("field")
    return ReportRejected(
        status,
        reason=str(error.get("reason", "Rejected")),
        field=field if isinstance(field, str) else None,
        message=str(error.get("message", "")),
    )


def _summary(payload: object) -> str:
    if isinstance(payload, dict) and isinstance(payload.get("error"), dict):
        return str(payload["error"].get("message", ""))
    return "no JSON error in the answer"


def _cause(error: Exception) -> str:
    """What went wrong as a person says it ("connection refused to HOST:PORT")."""
    return unreachable(error)
