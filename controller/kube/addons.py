"""The one I/O seam to Kubernetes: read the addon CR, replace its status, watch it, record
Events on it.

Everything else in the controller talks to the small `AddonStore` protocol, so unit tests put an
in-memory fake behind it and integration tests the real `kubernetes` client against a real HTTP
server. `KubeAddonStore` translates the client's exceptions into the few errors the shell acts
on (not found, conflict, gone) and sets `_request_timeout` on every call: a hung API server must
never hang the worker. The loop that keeps a watch going is `controller.spoke.watch.AddonWatch`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from typing import Any, Literal, Protocol

from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from statemachines.errors import AddonStatusError

__all__ = [
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "AddonNotFoundError",
    "AddonRef",
    "AddonStore",
    "ConflictError",
    "EventRecord",
    "GoneError",
    "KubeAddonStore",
    "StoreError",
    "WatchEvent",
    "WatchStream",
    "resource_version",
]

GROUP = "observability.open-cluster-management.io"
VERSION = "v1beta1"
PLURAL = "observabilityaddons"
KIND = "ObservabilityAddon"
COMPONENT = "addon-status"


EventType = Literal["SYNC", "ADDED", "MODIFIED", "DELETED", "BOOKMARK"]


class StoreError(AddonStatusError):
    """A call to the API server failed; `status` is the HTTP status (None: no answer)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class AddonNotFoundError(StoreError):
    """The addon CR does not exist (404)."""


class ConflictError(StoreError):
    """The CR changed since it was read (409): read it again and retry."""


class GoneError(StoreError):
    """The watch's resourceVersion is too old (410): list again."""


@dataclass(frozen=True, slots=True)
class AddonRef:
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """`SYNC` is a fresh read (the list of list-and-watch); the others come from the watch.
    A `BOOKMARK` only carries a newer resourceVersion; it is never delivered to the worker."""

    type: EventType
    object: dict[str, Any]


@dataclass(frozen=True, slots=True)
class EventRecord:
    """One Kubernetes Event to record on the addon CR (`uid` of the CR it is about).

    `at` is the Event's last occurrence; a repeated one (see `controller.spoke.event_series`)
    carries its `count`, its `first_at` and the `name` of the Event that holds the series."""

    reason: str
    message: str
    type: Literal["Normal", "Warning"]
    at: datetime
    uid: str | None = None
    name: str | None = None
    count: int = 1
    first_at: datetime | None = None


class WatchStream(Protocol):
    """One watch request: iterate its events; `close()` from another thread ends it."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None: ...


class AddonStore(Protocol):
    """The operations the controller needs on its one addon CR."""

    @property
    def ref(self) -> AddonRef: ...

    def get(self) -> dict[str, Any]:
        """The CR as stored now. Raises AddonNotFoundError, StoreError."""
        ...

    def list(self) -> tuple[dict[str, Any] | None, str]:
        """The CR (None if it does not exist) and the resourceVersion of the whole collection,
        the one a watch starts from: an object's own resourceVersion may be older than the
        server's compacted history, a list's never is. Raises StoreError."""
        ...

    def replace_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT `obj` on the status subresource; its `metadata.resourceVersion` is the
        precondition. Returns the stored CR.
        Raises ConflictError, AddonNotFoundError, StoreError."""
        ...

    def watch(self, resource_version: str, *, timeout_seconds: int) -> WatchStream:
        """Changes to the CR after `resource_version`; the stream raises GoneError (410) when that
        version is no longer in the server's history."""
        ...

    def record_event(self, record: EventRecord) -> str:
        """Create a core v1 Event whose involvedObject is the CR, named `record.name` (else a
        fresh name); the name it got. Raises StoreError."""
        ...

    def count_event(self, record: EventRecord) -> None:
        """Patch the Event `record.name` with the record's count, last time and message (as
        client-go's recorder does for a repeat). Raises StoreError; status 404 when the Event
        is gone."""
        ...


_BY_STATUS: dict[int, type[StoreError]] = {
    404: AddonNotFoundError,
    409: ConflictError,
    410: GoneError,
}


def _translated(error: Exception, what: str) -> StoreError:
    """The client's exception as one of ours, keeping the server's reason (never the headers,
    which carry the bearer token)."""
    if isinstance(error, ApiException):
        status = int(error.status) if error.status else None
        message = f"{what}: {status} {error.reason or ''}".rstrip()
        if status in (400, 422) and (detail := _status_message(error.body)):
            message += f": {detail}"  # which field the server refused, and why
        kind = _BY_STATUS.get(status or 0, StoreError)
        return kind(message, status=status)
    return StoreError(f"{what}: {type(error).__name__}: {error}")


def _status_message(body: object) -> str:
    """The `message` of the Status an API server answered with ("" if there is none)."""
    try:
        message = json.loads(body).get("message")  # type: ignore[arg-type]
    except (TypeError, ValueError, AttributeError):
        return ""
    return message if isinstance(message, str) else ""


class KubeAddonStore:
    """`AddonStore` on the official client; one `ApiClient` per kubeconfig, shared by the APIs."""

    def __init__(
        self,
        api_client: client.ApiClient,
        ref: AddonRef,
        *,
        request_timeout: float = 10.0,
        instance: str = "",
    ) -> None:
        self._ref = ref
        self._objects = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._timeout = request_timeout
        self._instance = instance
        self._names = count()

    @property
    def ref(self) -> AddonRef:
        return self._ref

    def get(self) -> dict[str, Any]:
        namespace, name = self._ref.namespace, self._ref.name
        try:
            obj = self._objects.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, _request_timeout=self._timeout
            )
        except (ApiException, HTTPError, OSError) as error:
            raise _translated(error, f"get {KIND} {self._ref}") from error
        return _as_object(obj)

    def list(self) -> tuple[dict[str, Any] | None, str]:
        namespace, name = self._ref.namespace, self._ref.name
        try:
            listed = self._objects.list_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                PLURAL,
                field_selector=f"metadata.name={name}",
                _request_timeout=self._timeout,
            )
        except (ApiException, HTTPError, OSError) as error:
            raise _translated(error, f"list {KIND} {self._ref}") from error
        collection = _as_object(listed)
        items = [i for i in collection.get("items") or [] if _name_of(i) == name]
        version = resource_version(collection)
        if not items:
            return None, version
        obj = _as_object(items[0])
        # List items may leave out what the collection says; a PUT body must carry them.
        obj.setdefault("apiVersion", f"{GROUP}/{VERSION}")
        obj.setdefault("kind", KIND)
        return obj, version

    def replace_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        namespace, name = self._ref.namespace, self._ref.name
        try:
            stored = self._objects.replace_namespaced_custom_object_status(
                GROUP, VERSION, namespace, PLURAL, name, obj, _request_timeout=self._timeout
            )
        except (ApiException, HTTPError, OSError) as error:
            raise _translated(error, f"replace status of {KIND} {self._ref}") from error
        return _as_object(stored)

    def watch(self, resource_version: str, *, timeout_seconds: int) -> WatchStream:
        return _KubeWatchStream(
            self._objects,
            self._ref,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            connect_timeout=self._timeout,
        )

    def record_event(self, record: EventRecord) -> str:
        at = _seconds(record.at)
        # client-go names Events `<object>.<hex nanoseconds>`; the counter keeps two Events of
        # one second apart.
        name = record.name or f"{self._ref.name}.{int(at.timestamp() * 1e9) + next(self._names):x}"
        body = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name=name, namespace=self._ref.namespace),
            involved_object=client.V1ObjectReference(
                api_version=f"{GROUP}/{VERSION}",
                kind=KIND,
                name=self._ref.name,
                namespace=self._ref.namespace,
                uid=record.uid,
            ),
            reason=record.reason,
            message=record.message,
            type=record.type,
            first_timestamp=_seconds(record.first_at or record.at),
            last_timestamp=at,
            count=record.count,
            source=client.V1EventSource(component=COMPONENT),
            reporting_component=COMPONENT,
            reporting_instance=self._instance or COMPONENT,
        )
        try:
            self._core.create_namespaced_event(
                self._ref.namespace, body, _request_timeout=self._timeout
            )
        except (ApiException, HTTPError, OSError) as error:
            raise _translated(error, f"record Event {record.reason}") from error
        return name

    def count_event(self, record: EventRecord) -> None:
        if record.name is None:
            raise ValueError("count_event needs the name of the Event that holds the series")
        # The strategic merge patch client-go's recorder sends for a repeat.
        patch = {
            "count": record.count,
            "lastTimestamp": _seconds(record.at).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "message": record.message,
        }
        try:
            self._core.patch_namespaced_event(
                record.name,
                self._ref.namespace,
                patch,
                _content_type="application/strategic-merge-patch+json",
                _request_timeout=self._timeout,
            )
        except (ApiException, HTTPError, OSError) as error:
            raise _translated(error, f"count Event {record.reason}") from error


def _seconds(at: datetime) -> datetime:
    """An Event's timestamps are whole seconds (metav1.Time), in UTC."""
    return at.astimezone(UTC).replace(microsecond=0)


class _KubeWatchStream:
    """A watch on the CR through `kubernetes.watch.Watch`, with its retries switched off (the
    loop in `AddonWatch` decides) and the events as plain dicts (custom objects have no model).
    """

    def __init__(
        self,
        objects: client.CustomObjectsApi,
        ref: AddonRef,
        *,
        resource_version: str,
        timeout_seconds: int,
        connect_timeout: float,
    ) -> None:
        self._objects = objects
        self._ref = ref
        self._resource_version = resource_version
        self._timeout_seconds = timeout_seconds
        self._connect_timeout = connect_timeout
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]

    def __iter__(self) -> Iterator[WatchEvent]:
        # The read timeout outlasts the server's own timeout, so a quiet watch ends cleanly;
        # only a dead connection hits it.
        read_timeout = self._timeout_seconds + max(self._connect_timeout, 5.0)
        try:
            for raw in self._watch.stream(  # type: ignore[no-untyped-call]
                self._objects.list_namespaced_custom_object,
                GROUP,
                VERSION,
                self._ref.namespace,
                PLURAL,
                field_selector=f"metadata.name={self._ref.name}",
                resource_version=self._resource_version,
                allow_watch_bookmarks=True,
                timeout_seconds=self._timeout_seconds,
                _request_timeout=(self._connect_timeout, read_timeout),
            ):
                event = _event_from(raw, self._ref.name)
                if event is not None:
                    yield event
        except (ApiException, HTTPError, OSError) as error:
            raise _translated(error, f"watch {KIND} {self._ref}") from error

    def close(self) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]


def _event_from(raw: Any, name: str) -> WatchEvent | None:
    """The watch line as a WatchEvent; None for a bookmark or another object's event."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("type")
    obj = raw.get("raw_object", raw.get("object"))
    if not isinstance(obj, dict):
        return None
    if kind == "BOOKMARK":
        return WatchEvent("BOOKMARK", {"metadata": obj.get("metadata") or {}})
    if kind not in ("ADDED", "MODIFIED", "DELETED"):
        return None
    if _name_of(obj) != name:
        return None
    return WatchEvent(kind, obj)


def resource_version(obj: Mapping[str, Any]) -> str:
    """An object's (or a list's) `metadata.resourceVersion`; "" when it has none."""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _name_of(obj: object) -> object:
    return (obj.get("metadata") or {}).get("name") if isinstance(obj, dict) else None


def _as_object(value: object) -> dict[str, Any]:
    """Custom objects come back from the client as plain dicts; anything else is a broken server."""
    if not isinstance(value, dict):
        raise StoreError(f"the API server answered {type(value).__name__}, not an object")
    return value
