"""Kubernetes `Status` failures: the one place that knows how kube-apiserver words, codes and
details an error, so that every path of the server fails the way a client expects.

Messages follow k8s.io/apimachinery (`errors.New*`, `field.Error`) word for word where the
client or a test might read them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from kubesim.fields import FieldError, go_quote

__all__ = [
    "APIError",
    "already_exists",
    "bad_request",
    "conflict",
    "expired",
    "forbidden",
    "internal",
    "invalid",
    "method_not_allowed",
    "not_acceptable",
    "not_found",
    "path_not_found",
    "qualified",
    "service_unavailable",
    "status_for_code",
    "success_status",
    "timeout",
    "too_large_resource_version",
    "too_many_requests",
    "unauthorized",
    "unsupported_media_type",
]

OPTIMISTIC_LOCK_MESSAGE: Final = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


class APIError(Exception):
    """A failure answered as a `Status`; raised anywhere below the HTTP layer, which only
    serialises it, so the wording of an error never depends on where it was detected."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: Mapping[str, Any] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = dict(details) if details is not None else None
        self.headers = dict(headers or {})

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:  # StatusReasonUnknown is "" and omitted, as kube-apiserver does
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = self.details
        body["code"] = self.code
        return body


def success_status(details: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": dict(details),
    }


def qualified(group: str, name: str) -> str:
    """`GroupResource.String()` / `GroupKind.String()`: the group is left out for the core."""
    return f"{name}.{group}" if group else name


def _details(group: str, kind: str, name: str, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    if group:
        out["group"] = group
    out["kind"] = kind
    out.update({k: v for k, v in more.items() if v})
    return out


def not_found(group: str, resource: str, name: str) -> APIError:
    message = f"{qualified(group, resource)} {go_quote(name)} not found"
    return APIError(404, "NotFound", message, _details(group, resource, name))


def path_not_found() -> APIError:
    """An unknown URL or resource type: kube-apiserver's router answers this, not a registry."""
    return APIError(404, "NotFound", "the server could not find the requested resource", {})


def already_exists(group: str, resource: str, name: str) -> APIError:
    message = f"{qualified(group, resource)} {go_quote(name)} already exists"
    return APIError(409, "AlreadyExists", message, _details(group, resource, name))


def conflict(group: str, resource: str, name: str, why: str = OPTIMISTIC_LOCK_MESSAGE) -> APIError:
    target = f"{qualified(group, resource)} {go_quote(name)}"
    message = f"Operation cannot be fulfilled on {target}: {why}"
    return APIError(409, "Conflict", message, _details(group, resource, name))


def bad_request(message: str) -> APIError:
    return APIError(400, "BadRequest", message)


def method_not_allowed() -> APIError:
    return APIError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def not_acceptable() -> APIError:
    return APIError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json",
    )


def unsupported_media_type(accepted: Sequence[str]) -> APIError:
    message = "the body of the request was in an unknown format - accepted media types include: "
    return APIError(415, "UnsupportedMediaType", message + ", ".join(accepted))


def unauthorized() -> APIError:
    return APIError(401, "Unauthorized", "Unauthorized")


def forbidden(
    user: str,
    verb: str,
    *,
    group: str,
    resource: str,
    subresource: str = "",
    namespace: str = "",
    name: str = "",
) -> APIError:
    res = f"{resource}/{subresource}" if subresource else resource
    where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
    why = f'User "{user}" cannot {verb} resource "{res}" in API group "{group}"{where}'
    target = qualified(group, resource) + (f" {go_quote(name)}" if name else "")
    details = _details(group, resource, name)
    return APIError(403, "Forbidden", f"{target} is forbidden: {why}", details)


def expired(message: str) -> APIError:
    return APIError(410, "Expired", message)


def internal(message: str) -> APIError:
    return APIError(
        500,
        "InternalError",
        f"Internal error occurred: {message}",
        {"causes": [{"message": message}]},
    )


def service_unavailable(
    message: str = "the server is currently unable to handle the request",
    retry_after: int | None = None,
) -> APIError:
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    details = {"retryAfterSeconds": retry_after} if retry_after else None
    return APIError(503, "ServiceUnavailable", message, details, headers=headers)


def too_many_requests(retry_after: int = 1) -> APIError:
    return APIError(
        429,
        "TooManyRequests",
        "Too many requests, please try again later.",
        {"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def timeout(message: str, retry_after: int | None = None) -> APIError:
    details = {"retryAfterSeconds": retry_after} if retry_after else None
    headers = {"Retry-After": str(retry_after)} if retry_after else None
    return APIError(504, "Timeout", message, details, headers=headers)


def too_large_resource_version(requested: int, current: int) -> APIError:
    return APIError(
        504,
        "Timeout",
        f"Too large resource version: {requested}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
        headers={"Retry-After": "1"},
    )


_REASONS: Final[Mapping[int, tuple[str, str]]] = {
    400: ("BadRequest", "the server rejected our request for an unknown reason"),
    401: ("Unauthorized", "Unauthorized"),
    403: ("Forbidden", "forbidden"),
    404: ("NotFound", "the server could not find the requested resource"),
    405: ("MethodNotAllowed", "the server does not allow this method on the requested resource"),
    406: ("NotAcceptable", "the server was unable to respond with a content type"),
    409: ("Conflict", OPTIMISTIC_LOCK_MESSAGE),
    410: ("Expired", "the resource has expired"),
    413: ("RequestEntityTooLarge", "the request entity is too large"),
    415: ("UnsupportedMediaType", "the body of the request was in an unknown format"),
    422: ("Invalid", "the server rejected our request due to an error in our request"),
    429: ("TooManyRequests", "Too many requests, please try again later."),
    500: ("InternalError", "an error on the server has prevented the request from succeeding"),
    503: ("ServiceUnavailable", "the server is currently unable to handle the request"),
    504: ("Timeout", "the server was unable to return a response in the time allotted"),
}


def status_for_code(
    code: int, message: str | None = None, retry_after: int | None = None
) -> APIError:
    """A plausible kube-apiserver failure for a bare status code (fault injection)."""
    if code == 429:
        return too_many_requests(retry_after or 1)
    if code == 503:
        return service_unavailable(message or _REASONS[503][1], retry_after)
    if code == 500 and message is None:
        return internal("injected fault")
    reason, default = _REASONS.get(code, ("", f"the server responded with the status code {code}"))
    headers = {"Retry-After": str(retry_after)} if retry_after is not None else None
    details = {"retryAfterSeconds": retry_after} if retry_after else None
    return APIError(code, reason, message or default, details, headers=headers)


def invalid(group: str, kind: str, name: str, errors: Sequence[FieldError]) -> APIError:
    """`errors.NewInvalid`: 422 whose message lists every distinct field error once."""
    unique: list[str] = []
    for error in errors:
        if str(error) not in unique:
            unique.append(str(error))
    listing = unique[0] if len(unique) == 1 else "[" + ", ".join(unique) + "]"
    message = f"{qualified(group, kind)} {go_quote(name)} is invalid"
    if unique:
        message += f": {listing}"
    causes = [{"reason": e.type.reason, "message": e.body(), "field": e.field} for e in errors]
    details = _details(group, kind, name)
    details["causes"] = causes
    return APIError(422, "Invalid", message, details)
