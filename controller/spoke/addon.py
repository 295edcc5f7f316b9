"""The addon CR through the `Kube` seam: read it, replace its status, record Events on it.

`AddonStore` binds the seam to one CR's coordinates. Its watch is `controller.spoke.watches`
(on the one list-then-watch loop); the loop that writes its status,
`controller.kube.update.update_status`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import count
from typing import Any, Literal

from controller.kube.api import ADDON, EVENT, ApiResource, Kube

__all__ = [
    "GROUP",
    "KIND",
    "PLURAL",
    "VERSION",
    "AddonRef",
    "AddonStore",
    "EventRecord",
]

GROUP = ADDON.group
VERSION = ADDON.version
PLURAL = ADDON.plural
KIND = ADDON.kind
COMPONENT = "addon-status"


@dataclass(frozen=True, slots=True)
class AddonRef:
    namespace: str
    name: str
    resource: ApiResource = ADDON  # the kind: MCO's, or the project's own beside MCO

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


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


class AddonStore:
    """The operations the controller needs on its one addon CR; every method raises a
    `controller.kube.api.KubeError`."""

    def __init__(self, kube: Kube, ref: AddonRef, *, instance: str = "") -> None:
        self.kube = kube
        self.ref = ref
        self._instance = instance
        self._names = count()

    def get(self) -> dict[str, Any]:
        """The CR as stored now."""
        return self.kube.get(self.ref.resource, self.ref.namespace, self.ref.name)

    def replace_status(self, obj: dict[str, Any]) -> dict[str, Any]:
        """PUT `obj` on the status subresource; its `metadata.resourceVersion` is the
        precondition. Returns the stored CR."""
        return self.kube.replace_status(self.ref.resource, self.ref.namespace, self.ref.name, obj)

    def record_event(self, record: EventRecord) -> str:
        """Create a core v1 Event whose involvedObject is the CR, named `record.name` (else a
        fresh name); the name it got."""
        at = _seconds(record.at)
        # client-go names Events `<object>.<hex nanoseconds>`; the counter keeps two Events of
        # one second apart.
        name = record.name or f"{self.ref.name}.{int(at.timestamp() * 1e9) + next(self._names):x}"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": self.ref.namespace},
            "involvedObject": {
                "apiVersion": self.ref.resource.api_version,
                "kind": self.ref.resource.kind,
                "name": self.ref.name,
                "namespace": self.ref.namespace,
                **({"uid": record.uid} if record.uid else {}),
            },
            "reason": record.reason,
            "message": record.message,
            "type": record.type,
            "firstTimestamp": _stamp(record.first_at or record.at),
            "lastTimestamp": _stamp(at),
            "count": record.count,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self._instance or COMPONENT,
        }
        self.kube.create(EVENT, self.ref.namespace, body)
        return name

    def count_event(self, record: EventRecord) -> None:
        """Patch the Event `record.name` with the record's count, last time and message (the
        strategic merge patch client-go's recorder sends for a repeat); NotFoundError when the
        Event is gone."""
        if record.name is None:
            raise ValueError("count_event needs the name of the Event that holds the series")
        patch = {
            "count": record.count,
            "lastTimestamp": _stamp(record.at),
            "message": record.message,
        }
        self.kube.patch(EVENT, self.ref.namespace, record.name, patch)


def _seconds(at: datetime) -> datetime:
    """An Event's timestamps are whole seconds (metav1.Time), in UTC."""
    return at.astimezone(UTC).replace(microsecond=0)


def _stamp(at: datetime) -> str:
    return _seconds(at).strftime("%Y-%m-%dT%H:%M:%SZ")
