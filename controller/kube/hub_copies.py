"""The fleet view's reads of the hub: every cluster's hub copy of the addon in one list call
across all namespaces, and a watch from that list's resourceVersion.

One list call, without `limit`: the API server answers it whole (from its watch cache on a
real hub), which for 5,000 copies is one round trip instead of ten pages; `limit`/`continue`
would only split the same work. The watch is plain `kubernetes.watch.Watch` with its own
retries off, so the caller decides: `ListExpired` (410 Gone) means list again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from kubernetes import watch
from kubernetes.client import ApiClient, CustomObjectsApi
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controller.kube.addons import GROUP, KIND, PLURAL, VERSION
from statemachines.errors import AddonStatusError

__all__ = ["FleetReadError", "HubCopyEvent", "Listing", "list_hub_copies", "watch_hub_copies"]

EventType = Literal["ADDED", "MODIFIED", "DELETED"]


class FleetReadError(AddonStatusError):
    """The hub did not answer a read; the message says what and why (never credentials)."""


@dataclass(frozen=True)
class Listing:
    """Every hub copy as of `resource_version` (where a watch continues)."""

    items: list[dict[str, Any]]
    resource_version: str


@dataclass(frozen=True)
class HubCopyEvent:
    type: EventType
    copy: dict[str, Any]

    @property
    def resource_version(self) -> str:
        return str((self.copy.get("metadata") or {}).get("resourceVersion") or "")


def list_hub_copies(api_client: ApiClient, *, request_timeout: float = 30.0) -> Listing:
    """All hub copies (`ObservabilityAddon` in every namespace), in one call."""
    api = CustomObjectsApi(api_client)
    # Decoding 5,000 copies allocates ~300,000 containers, none in a cycle: the collector's
    # passes over them (a third of the decode time, measured) find nothing, so it waits.
    collecting = gc.isenabled()
    gc.disable()
    try:
        answer = api.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, _request_timeout=request_timeout
        )
    except (ApiException, HTTPError, OSError) as error:
        raise _read_error(error, "list") from error
    finally:
        if collecting:
            gc.enable()
    if not isinstance(answer, dict) or not isinstance(answer.get("items"), list):
        raise FleetReadError(f"list {KIND}: the hub answered something that is not a list")
    items, meta = answer["items"], answer.get("metadata") or {}
    return Listing([i for i in items if isinstance(i, dict)], str(meta.get("resourceVersion", "")))


def watch_hub_copies(
    api_client: ApiClient,
    resource_version: str,
    *,
    timeout_seconds: int = 300,
    connect_timeout: float = 10.0,
) -> Iterator[HubCopyEvent]:
    """The hub copies' changes after `resource_version`, until the server ends the watch
    (after `timeout_seconds`). Bookmarks are skipped; raises FleetReadError when the watch
    fails, 410 Gone included (the caller lists again)."""
    api = CustomObjectsApi(api_client)
    # The read timeout outlasts the server's own, so only a dead connection hits it.
    read_timeout = timeout_seconds + max(connect_timeout, 5.0)
    stream = watch.Watch().stream(  # type: ignore[no-untyped-call]
        api.list_cluster_custom_object,
        GROUP,
        VERSION,
        PLURAL,
        resource_version=resource_version,
        timeout_seconds=timeout_seconds,
        _request_timeout=(connect_timeout, read_timeout),
    )
    try:
        for raw in stream:
            kind, obj = raw.get("type"), raw.get("raw_object", raw.get("object"))
            if kind in ("ADDED", "MODIFIED", "DELETED") and isinstance(obj, dict):
                yield HubCopyEvent(kind, obj)
    except (ApiException, HTTPError, OSError) as error:
        raise _read_error(error, "watch") from error


def _read_error(error: Exception, what: str) -> FleetReadError:
    if isinstance(error, ApiException):
        status = int(error.status or 0)
        return FleetReadError(f"{what} {KIND} on the hub: {status} {error.reason or ''}".rstrip())
    return FleetReadError(f"{what} {KIND} on the hub: {type(error).__name__}: {error}")
