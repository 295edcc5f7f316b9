"""The one seam between hub replication and the hub's API: read, create and write the status
of the addon CR, with every failure turned into a `HubError` of a small set of kinds.

Replication decides by kind (409: read again; 401/403: reload credentials; 429/503: wait as
long as the server asks; anything else: back off), so the mapping from HTTP to kinds lives
here, once. Unit tests put an in-memory hub behind `HubObjects`; production and integration
tests use `KubernetesHubObjects` with the official client.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any, Final, Protocol

import urllib3
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException

from controller.kube.addons import GROUP, KIND, PLURAL, VERSION
from statemachines.errors import AddonStatusError

__all__ = [
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "ErrorKind",
    "HubError",
    "HubObjects",
    "KubernetesHubObjects",
    "error_kind",
    "parse_retry_after",
]

_DETAIL_LIMIT: Final = 200


class ErrorKind(enum.StrEnum):
    """Why a hub call failed; also the `kind` label of the error metric."""

    CONFLICT = "conflict"
    NOT_FOUND = "not_found"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    THROTTLED = "throttled"
    UNAVAILABLE = "unavailable"
    SERVER = "server"
    INVALID = "invalid"
    NETWORK = "network"
    OTHER = "other"


class HubError(AddonStatusError):
    """A failed hub call. `detail` is safe to log (no credentials); `retry_after` is the
    server's requested wait in seconds, if it sent one."""

    def __init__(
        self,
        kind: ErrorKind,
        detail: str,
        *,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(f"{kind}: {detail}")
        self.kind = kind
        self.detail = detail
        self.status = status
        self.retry_after = retry_after


def error_kind(status: int) -> ErrorKind:
    """The kind of an HTTP status code; 0 is the client's code for "no HTTP answer"."""
    known = {
        0: ErrorKind.NETWORK,
        400: ErrorKind.INVALID,
        401: ErrorKind.UNAUTHORIZED,
        403: ErrorKind.FORBIDDEN,
        404: ErrorKind.NOT_FOUND,
        409: ErrorKind.CONFLICT,
        422: ErrorKind.INVALID,
        429: ErrorKind.THROTTLED,
        502: ErrorKind.UNAVAILABLE,
        503: ErrorKind.UNAVAILABLE,
        504: ErrorKind.UNAVAILABLE,
    }
    if status in known:
        return known[status]
    return ErrorKind.SERVER if status >= 500 else ErrorKind.OTHER


def parse_retry_after(value: str | None, *, now: datetime) -> float | None:
    """`Retry-After` as seconds (what kube-apiserver sends) or as an HTTP date; None when
    absent or unreadable, so a garbled header falls back to plain backoff."""
    if value is None or not value.strip():
        return None
    text = value.strip()
    if text.isdigit():
        return float(text)
    try:
        moment = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return max((moment - now).total_seconds(), 0.0)


class HubObjects(Protocol):
    """The hub's addon CRs, as plain JSON dicts. Every method raises `HubError` on failure."""

    def read(self, namespace: str, name: str) -> dict[str, Any]: ...

    def replace_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """PUT the status subresource; `body.metadata.resourceVersion` makes it conditional."""
        ...

    def create(self, namespace: str, name: str) -> dict[str, Any]: ...


class KubernetesHubObjects:
    """`HubObjects` over the official client. Every call carries a request timeout, so a hub
    that accepts the connection and then says nothing cannot hold replication forever."""

    def __init__(
        self, api_client: ApiClient, *, request_timeout: tuple[float, float] = (5.0, 15.0)
    ) -> None:
        self._api = CustomObjectsApi(api_client)
        self._timeout = request_timeout

    def read(self, namespace: str, name: str) -> dict[str, Any]:
        return self._call(
            self._api.get_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, name
        )

    def replace_status(self, body: Mapping[str, Any]) -> dict[str, Any]:
        meta = body["metadata"]
        return self._call(
            self._api.replace_namespaced_custom_object_status,
            GROUP,
            VERSION,
            meta["namespace"],
            PLURAL,
            meta["name"],
            dict(body),
        )

    def create(self, namespace: str, name: str) -> dict[str, Any]:
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "metadata": {"name": name, "namespace": namespace},
        }
        return self._call(
            self._api.create_namespaced_custom_object, GROUP, VERSION, namespace, PLURAL, body
        )

    def _call(self, method: Callable[..., Any], *args: Any) -> dict[str, Any]:
        try:
            result = method(*args, _request_timeout=self._timeout)
        except ApiException as error:
            raise _from_api_exception(error) from error
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise HubError(ErrorKind.NETWORK, type(error).__name__) from error
        if not isinstance(result, dict):
            raise HubError(ErrorKind.OTHER, f"unexpected answer of type {type(result).__name__}")
        return result


def _from_api_exception(error: ApiException) -> HubError:
    status = int(error.status or 0)
    body = _status_body(error.body)
    headers = error.headers or {}
    retry_after = parse_retry_after(headers.get("Retry-After"), now=datetime.now(UTC))
    details = body.get("details")
    if retry_after is None and isinstance(details, dict):
        seconds = details.get("retryAfterSeconds")
        retry_after = float(seconds) if isinstance(seconds, int) and seconds > 0 else None
    message = body.get("message") if isinstance(body.get("message"), str) else error.reason
    detail = f"{status} {message or ''}".strip()[:_DETAIL_LIMIT]
    return HubError(error_kind(status), detail, status=status, retry_after=retry_after)


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
