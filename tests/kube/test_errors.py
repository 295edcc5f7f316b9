"""The seam's one error vocabulary: which HTTP status is which class and which kind of
failure, and `Retry-After` read as kube-apiserver sends it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from controller.kube.answers import parse_retry_after
from controller.kube.api import (
    ConflictError,
    ErrorKind,
    ForbiddenError,
    GoneError,
    InvalidError,
    KubeError,
    NotFoundError,
    UnauthorizedError,
    UnavailableError,
    error_for,
)

NOW = datetime(2025, 3, 1, 12, 0, 0, 250_000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        pytest.param(None, UnavailableError, id="no-answer"),
        pytest.param(400, InvalidError, id="bad-request"),
        pytest.param(401, UnauthorizedError, id="unauthorized"),
        pytest.param(403, ForbiddenError, id="forbidden"),
        pytest.param(404, NotFoundError, id="not-found"),
        pytest.param(409, ConflictError, id="conflict"),
        pytest.param(410, GoneError, id="gone"),
        pytest.param(413, InvalidError, id="request-entity-too-large"),
        pytest.param(422, InvalidError, id="unprocessable"),
        pytest.param(429, UnavailableError, id="throttled"),
        pytest.param(500, UnavailableError, id="server-error"),
        pytest.param(418, KubeError, id="anything-else"),
    ],
)
def test_http_status_to_error_class(status: int | None, kind: type[KubeError]) -> None:
    error = error_for("failed", status=status)
    assert type(error) is kind and isinstance(error, KubeError)


def test_etcds_request_is_too_large_is_a_refusal_not_an_outage() -> None:
    """kube-apiserver answers a value over etcd's limit with a 500 whose message says
    `etcdserver: request is too large`: sending it again cannot help."""
    error = error_for("update: 500 etcdserver: request is too large", status=500)
    assert type(error) is InvalidError and error.kind.value == "invalid"


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        pytest.param("3", 3.0, id="delta-seconds"),
        pytest.param(" 10 ", 10.0, id="padded"),
        pytest.param("Sat, 01 Mar 2025 12:00:05 GMT", 4.75, id="http-date"),
        pytest.param("Sat, 01 Mar 2025 11:00:00 GMT", 0.0, id="http-date-in-the-past"),
        pytest.param("soon", None, id="garbage"),
        pytest.param("²", None, id="a-digit-that-is-not-ascii"),
        pytest.param("1.5", None, id="a-fraction"),
        pytest.param("-3", None, id="negative"),
        pytest.param("", None, id="empty"),
        pytest.param(None, None, id="absent"),
    ],
)
def test_retry_after_header(header: str | None, seconds: float | None) -> None:
    assert parse_retry_after(header, now=NOW) == seconds


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (0, ErrorKind.NETWORK),
        (400, ErrorKind.INVALID),
        (401, ErrorKind.UNAUTHORIZED),
        (403, ErrorKind.FORBIDDEN),
        (404, ErrorKind.NOT_FOUND),
        (409, ErrorKind.CONFLICT),
        (422, ErrorKind.INVALID),
        (429, ErrorKind.THROTTLED),
        (500, ErrorKind.SERVER),
        (503, ErrorKind.UNAVAILABLE),
        (504, ErrorKind.UNAVAILABLE),
        (418, ErrorKind.OTHER),
    ],
)
def test_http_status_to_error_kind(status: int, kind: ErrorKind) -> None:
    assert error_for("failed", status=status or None).kind is kind
