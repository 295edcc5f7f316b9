"""The one seam to Kubernetes: objects by coordinates, as plain JSON dicts, and one tree of
errors.

Every part of the controller reaches an API server through `Kube`: the addon CR on the spoke
and its Events, its copy on the hub, the objects health rules watch (any kind the server serves,
found by discovery), the hub side's `ManagedClusterAddOn`s, the Lease of leader election and
TokenReview. The one list-then-watch loop over it is `controller.kube.reflector`.
`controller.kube.rest.RestKube` implements it over HTTP (production and integration tests
against a real HTTP server); `controller.kube.fake.FakeKube` in memory (unit
tests), as httpx tests inject a `MockTransport`.

Errors are one tree under `KubeError`, chained with `raise ... from` to the client's exception.
A caller catches the class it acts on (`ConflictError`: read again; `GoneError`: list again;
`NotFoundError`; `InvalidError`: the server will never take this body) and labels metrics with
`kind`, finer-grained than the classes (`throttled`, `server`, `network` are all
`UnavailableError`: try again later).
"""

from __future__ import annotations

import builtins
import enum
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, cast

from controller.kube.reads import Reads
from statemachines.errors import AddonStatusError

__all__ = [
    "ADDON",
    "ADDON_KINDS",
    "ALL_NAMESPACES",
    "CONFIG_MAP",
    "EVENT",
    "LEASE",
    "NAMESPACE",
    "OWN_ADDON",
    "SECRET",
    "ApiResource",
    "ConflictError",
    "ConnectionSetupError",
    "ErrorKind",
    "ForbiddenError",
    "GoneError",
    "InvalidError",
    "Keep",
    "KindNotServedError",
    "Kube",
    "KubeError",
    "NotFoundError",
    "Page",
    "Reads",
    "UnauthorizedError",
    "UnavailableError",
    "WatchEvent",
    "WatchStream",
    "error_for",
    "json_copy",
    "resource_version",
    "whole",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ApiResource:
    """A resource's coordinates as discovery names them (`APIResource`); `group` is "" for the
    core API."""

    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool = True

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    def path(self, namespace: str, name: str = "", subresource: str = "") -> str:
        """The URL path; `namespace` ALL_NAMESPACES (a list or a watch only) spans them all; a
        cluster-scoped resource has no namespace in its path."""
        root = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        scope = f"/namespaces/{namespace}" if namespace and self.namespaced else ""
        path = f"{root}{scope}/{self.plural}"
        if name:
            path += f"/{name}"
        if subresource:
            path += f"/{subresource}"
        return path


ADDON = ApiResource(
    "observability.open-cluster-management.io",
    "v1beta1",
    "observabilityaddons",
    "ObservabilityAddon",
)
OWN_ADDON = ApiResource("status.addon-status.io", "v1alpha1", "addonstatuses", "AddonStatus")
"""The project's own kind, for running beside ACM's observability operator (docs/spec.md
§12.1): MCO never reads or writes it, so neither owns what the other writes."""
ADDON_KINDS = {ADDON.kind: ADDON, OWN_ADDON.kind: OWN_ADDON}
"""The addon CR's kind as `--addon-kind` names it: MCO's (the default) or the project's own."""
LEASE = ApiResource("coordination.k8s.io", "v1", "leases", "Lease")
ALL_NAMESPACES = ""  # as client-go's metav1.NamespaceAll: a list or a watch across namespaces
EVENT = ApiResource("", "v1", "events", "Event")
CONFIG_MAP = ApiResource("", "v1", "configmaps", "ConfigMap")
SECRET = ApiResource("", "v1", "secrets", "Secret")
NAMESPACE = ApiResource("", "v1", "namespaces", "Namespace", namespaced=False)


class ErrorKind(enum.StrEnum):
    """Why a call failed, finer than the error classes; the `kind` label of error metrics."""

    CONFLICT = "conflict"
    NOT_FOUND = "not_found"
    GONE = "gone"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    THROTTLED = "throttled"
    UNAVAILABLE = "unavailable"
    SERVER = "server"
    INVALID = "invalid"
    NETWORK = "network"
    OTHER = "other"


_KINDS = {
    400: ErrorKind.INVALID,
    401: ErrorKind.UNAUTHORIZED,
    403: ErrorKind.FORBIDDEN,
    404: ErrorKind.NOT_FOUND,
    409: ErrorKind.CONFLICT,
    410: ErrorKind.GONE,
    413: ErrorKind.INVALID,
    422: ErrorKind.INVALID,
    429: ErrorKind.THROTTLED,
    502: ErrorKind.UNAVAILABLE,
    503: ErrorKind.UNAVAILABLE,
    504: ErrorKind.UNAVAILABLE,
}


class KubeError(AddonStatusError):
    """A call to an API server failed. `status` is the HTTP status (None: no answer);
    `detail` is safe to log (never a header or a token); `retry_after` is the wait in seconds
    the server asked for, if any."""

    def __init__(
        self, detail: str, *, status: int | None = None, retry_after: float | None = None
    ) -> None:
        super().__init__(detail)
        self.detail = detail
        self.status = status
        self.retry_after = retry_after

    @property
    def kind(self) -> ErrorKind:
        if self.status is None:
            return ErrorKind.NETWORK
        if isinstance(self, InvalidError):
            return ErrorKind.INVALID
        known = _KINDS.get(self.status)
        if known is not None:
            return known
        return ErrorKind.SERVER if self.status >= 500 else ErrorKind.OTHER


class ConnectionSetupError(AddonStatusError):
    """The connection cannot be made as configured (a CA or key that does not load, a plugin
    that fails); the message names what, never a secret."""


class NotFoundError(KubeError):
    """The object does not exist (404)."""


class ConflictError(KubeError):
    """The object changed since it was read (409), or already exists: read it again."""


class GoneError(KubeError):
    """A watch's resourceVersion is older than the server's history (410): list again."""


class InvalidError(KubeError):
    """The server refuses the body itself: 400, 413 (over its request limit), 422, or etcd's
    "request is too large" (a 500): sending it again cannot help."""


class UnauthorizedError(KubeError):
    """The credentials prove nobody (401): reload them."""


class ForbiddenError(KubeError):
    """The caller may not do this (403)."""


class UnavailableError(KubeError):
    """No answer, throttled (429) or a server error (5xx): try again later."""


class KindNotServedError(NotFoundError):
    """Discovery finds no resource of this apiVersion and kind (a CRD not installed yet)."""


_TOO_LARGE = "request is too large"  # etcd's words for a value over its limit
_CLASSES: dict[int, type[KubeError]] = {
    400: InvalidError,
    401: UnauthorizedError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    410: GoneError,
    413: InvalidError,
    422: InvalidError,
    429: UnavailableError,
}


def error_for(detail: str, *, status: int | None, retry_after: float | None = None) -> KubeError:
    """The error of the tree for an HTTP status (None: no answer at all)."""
    if status is not None and status >= 500 and _TOO_LARGE in detail:
        kind: type[KubeError] = InvalidError  # etcd refused the value: it always will
    elif status is None or status >= 500:
        kind = UnavailableError
    else:
        kind = _CLASSES.get(status, KubeError)
    return kind(detail, status=status, retry_after=retry_after)


Keep = Callable[[dict[str, Any]], T | None]
"""What a reader keeps of each listed object (None: nothing); the rest is dropped at once."""


def whole(obj: dict[str, Any]) -> dict[str, Any]:
    """Keep the whole object."""
    return obj


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a list: what `keep` kept of each item, in order; the list's
    resourceVersion (a watch starts from it); the token of the next page ("" on the last); its
    size on the wire in bytes."""

    items: list[T]
    resource_version: str
    continue_token: str = ""
    size: int = 0


EventType = Literal["SYNC", "ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """`SYNC` is a fresh read (the list of list-and-watch); the others come from the watch.
    A `BOOKMARK` only carries a newer resourceVersion; it is never delivered to the worker."""

    type: EventType
    object: dict[str, Any]


class WatchStream(Protocol):
    """One watch request: iterate its events (raises `GoneError` when the start version is
    no longer in the server's history); `close()` from another thread ends it."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class Kube(Protocol):
    """What the controller does with an API server. Objects are plain JSON dicts; every method
    raises a `KubeError`. A write's `metadata.resourceVersion`, when set, is its precondition
    (409 when the object moved on)."""

    def discover(self, api_version: str, kind: str) -> ApiResource:
        """The resource that serves `kind` in `api_version`, as discovery lists it. Raises
        KindNotServedError when the server serves no such kind (yet)."""
        ...

    def get(self, resource: ApiResource, namespace: str, name: str) -> dict[str, Any]: ...

    def list(
        self,
        resource: ApiResource,
        namespace: str,
        *,
        keep: Keep[T],
        field_selector: str = "",
        label_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        reads: Reads = "object",
    ) -> Page[T]:
        """One page of the collection (in every namespace for ALL_NAMESPACES): each item is
        decoded (as much of it as `reads` says) and handed to `keep` one at a time, so a large
        list never sits decoded in memory whole. With `limit`, at most that many items; a
        `continue_token` in the page asks for the next one (given back as `continue_token`),
        all pages of one consistent list (`controller.kube.pager` follows them)."""
        ...

    def watch(
        self,
        resource: ApiResource,
        namespace: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        field_selector: str = "",
        label_selector: str = "",
        reads: Reads = "object",
    ) -> WatchStream:
        """Each event's object decoded as much as `reads` says (an ERROR's whole)."""
        ...

    def create(
        self, resource: ApiResource, namespace: str, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...

    def replace(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]: ...

    def replace_status(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        """PUT on the status subresource: the server keeps the spec as stored."""
        ...

    def patch(
        self,
        resource: ApiResource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        merge: bool = False,
    ) -> dict[str, Any]:
        """A strategic merge patch (what client-go's Event recorder sends for a repeat); with
        `merge`, a JSON merge patch (RFC 7386: what custom resources take), whose
        `metadata.resourceVersion`, when set, is a precondition."""
        ...

    def patch_status(
        self, resource: ApiResource, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A JSON merge patch (RFC 7386) of the status subresource: what it names replaces
        what is stored, a list whole; a `metadata.resourceVersion` in it is a precondition
        (409 when the object moved on). Custom resources take merge patches, not strategic
        ones."""
        ...

    def review_token(self, token: str, audiences: builtins.list[str]) -> dict[str, Any]:
        """A TokenReview's `status` (authenticated, user, audiences). The token never appears
        in an error."""
        ...


def resource_version(obj: Mapping[str, Any]) -> str:
    """An object's (or a list's) `metadata.resourceVersion`; "" when it has none."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def json_copy(value: T) -> T:
    """A deep copy of a JSON value: about a fourth of what `copy.deepcopy` costs, which memoises
    every node against cycles JSON cannot have (the spoke copies a status four or five times
    per write). Like it, no container is shared: any other mapping is copied as a dict, a tuple
    as a tuple."""
    return cast(T, _json_copy(value))


_LEAVES = frozenset({str, int, float, bool, type(None)})


def _json_copy(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _json_copy(item) for key, item in value.items()}
    if kind is list:
        return [_json_copy(item) for item in value]
    if kind in _LEAVES:
        return value
    if isinstance(value, Mapping):
        return {key: _json_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        copied = [_json_copy(item) for item in value]
        return tuple(copied) if isinstance(value, tuple) else copied
    return value  # an enum member or another immutable leaf
