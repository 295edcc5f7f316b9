"""Reading the objects that health rules watch (section 8), by kind and name, with the official
client's dynamic client: one narrow interface, `ObjectSource`, for `controller.health`.

The dynamic client finds the resource (its plural, whether it is namespaced) by discovery, so
any kind the API server serves can be watched with no code per kind; a kind it does not serve
(a CRD not installed yet) is `KindNotServedError`, asked again on the next list (the client's
discovery is refreshed on a miss). Reads go by name: a list with the field selector
`metadata.name=<name>` (its resourceVersion is the collection's, the one a watch may start
from) and a watch with the same selector, as `KubeAddonStore` does for the addon CR.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from kubernetes import client, dynamic, watch
from kubernetes.client.exceptions import ApiException
from kubernetes.dynamic.exceptions import DynamicApiError, ResourceNotFoundError
from urllib3.exceptions import HTTPError

from controller.kube.api import KubeError, WatchEvent, WatchStream, error_for

__all__ = [
    "KindNotServedError",
    "KubeObjectSource",
    "ObjectKey",
    "ObjectSource",
    "dynamic_client",
    "object_sources",
]


class KindNotServedError(KubeError):
    """The API server does not serve this apiVersion and kind (yet)."""


@dataclass(frozen=True, slots=True)
class ObjectKey:
    """Which object: the configuration's `object` of a resource, namespace filled in."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} ({self.api_version})"


class ObjectSource(Protocol):
    """List-and-watch of one object by name."""

    @property
    def key(self) -> ObjectKey: ...

    def list(self) -> tuple[dict[str, Any] | None, str]:
        """The object (None if it does not exist) and the collection's resourceVersion.
        Raises KindNotServedError, KubeError."""
        ...

    def watch(self, resource_version: str, *, timeout_seconds: int) -> WatchStream:
        """Its changes after `resource_version`; the stream raises `api.GoneError` on 410."""
        ...


def dynamic_client(api_client: client.ApiClient) -> dynamic.DynamicClient:
    """A dynamic client whose discovery cache is a file of this process's own (the client's
    default is shared by every process for the same server URL)."""
    cache = os.path.join(tempfile.mkdtemp(prefix="addon-status-discovery-"), "cache.json")
    return dynamic.DynamicClient(api_client, cache_file=cache)  # type: ignore[no-untyped-call]


def object_sources(
    api_client: client.ApiClient, *, request_timeout: float = 10.0
) -> Callable[[ObjectKey], ObjectSource]:
    """Sources that share one dynamic client (one discovery) on `api_client`."""
    dynamic_api = dynamic_client(api_client)

    def source(key: ObjectKey) -> ObjectSource:
        return KubeObjectSource(dynamic_api, key, request_timeout=request_timeout)

    return source


class KubeObjectSource:
    """`ObjectSource` on the dynamic client."""

    def __init__(
        self, dynamic_api: dynamic.DynamicClient, key: ObjectKey, *, request_timeout: float = 10.0
    ) -> None:
        self._dynamic = dynamic_api
        self._key = key
        self._timeout = request_timeout

    @property
    def key(self) -> ObjectKey:
        return self._key

    def _resource(self) -> Any:
        try:
            return self._dynamic.resources.get(
                api_version=self._key.api_version, kind=self._key.kind
            )
        except ResourceNotFoundError as error:
            raise KindNotServedError(
                f"{self._key.api_version} {self._key.kind} is not served"
            ) from error
        except (ApiException, DynamicApiError, HTTPError, OSError) as error:
            raise _translated(
                error, f"discover {self._key.api_version} {self._key.kind}"
            ) from error

    def _namespace(self, resource: Any) -> str | None:
        return self._key.namespace if resource.namespaced else None

    def list(self) -> tuple[dict[str, Any] | None, str]:
        resource = self._resource()
        try:
            listed = resource.get(
                namespace=self._namespace(resource),
                field_selector=f"metadata.name={self._key.name}",
                _request_timeout=self._timeout,
            ).to_dict()
        except (ApiException, DynamicApiError, HTTPError, OSError) as error:
            raise _translated(error, f"list {self._key}") from error
        items = [i for i in listed.get("items") or [] if _name_of(i) == self._key.name]
        version = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        return (items[0] if items else None), version

    def watch(self, resource_version: str, *, timeout_seconds: int) -> WatchStream:
        resource = self._resource()
        return _ObjectWatch(
            resource,
            self._namespace(resource),
            self._key,
            resource_version=resource_version,
            timeout_seconds=timeout_seconds,
            connect_timeout=self._timeout,
        )


class _ObjectWatch:
    """One watch request by field selector, the client's own retries on 410 switched off."""

    def __init__(
        self,
        resource: Any,
        namespace: str | None,
        key: ObjectKey,
        *,
        resource_version: str,
        timeout_seconds: int,
        connect_timeout: float,
    ) -> None:
        self._resource = resource
        self._namespace = namespace
        self._key = key
        self._resource_version = resource_version
        self._timeout_seconds = timeout_seconds
        self._connect_timeout = connect_timeout
        self._watch = watch.Watch()  # type: ignore[no-untyped-call]

    def __iter__(self) -> Iterator[WatchEvent]:
        # The read timeout outlasts the server's own, so a quiet watch ends cleanly.
        read_timeout = self._timeout_seconds + max(self._connect_timeout, 5.0)
        try:
            for raw in self._watch.stream(  # type: ignore[no-untyped-call]
                self._resource.get,
                namespace=self._namespace,
                field_selector=f"metadata.name={self._key.name}",
                resource_version=self._resource_version,
                serialize=False,
                allow_watch_bookmarks=True,
                timeout_seconds=self._timeout_seconds,
                _request_timeout=(self._connect_timeout, read_timeout),
            ):
                event = _event_from(raw, self._key.name)
                if event is not None:
                    yield event
        except (ApiException, DynamicApiError, HTTPError, OSError) as error:
            raise _translated(error, f"watch {self._key}") from error

    def close(self) -> None:
        self._watch.stop()  # type: ignore[no-untyped-call]


def _event_from(raw: Any, name: str) -> WatchEvent | None:
    if not isinstance(raw, dict):
        return None
    obj = raw.get("raw_object", raw.get("object"))
    kind = raw.get("type")
    if not isinstance(obj, dict):
        return None
    if kind == "BOOKMARK":
        return WatchEvent("BOOKMARK", {"metadata": obj.get("metadata") or {}})
    if kind not in ("ADDED", "MODIFIED", "DELETED") or _name_of(obj) != name:
        return None
    return WatchEvent(kind, obj)


def _name_of(obj: Any) -> str | None:
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    return meta.get("name") if isinstance(meta, dict) else None


def _translated(error: Exception, what: str) -> KubeError:
    """The client's exception as one of the seam's tree (never its headers: they carry the
    token); no status means no answer."""
    status = getattr(error, "status", None)
    if isinstance(status, int) and status:
        detail = f"{what}: {status} {getattr(error, 'reason', '') or ''}".rstrip()
        return error_for(detail, status=status)
    return error_for(f"{what}: {type(error).__name__}: {error}", status=None)
