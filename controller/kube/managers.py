"""Who wrote an object's status, from its `managedFields`: the API server's record of each field
manager's writes (`manager`: the writer's `fieldManager`, else its User-Agent up to the first
`/`; `subresource`: "status" for a status write). The project's processes are `OURS` (their
User-Agent, `controller.kube.connection`); another writer of a status the project owns is told,
never fought (docs/spec.md §12.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["OURS", "last_status_writer", "other_status_writers"]

OURS: Final = "addon-status"


def _status_entries(managed_fields: object) -> list[Mapping[str, Any]]:
    """The entries of a status write: of the status subresource, or of the main resource
    holding `f:status`."""
    found = []
    for entry in managed_fields if isinstance(managed_fields, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("manager"), str):
            continue
        fields = entry.get("fieldsV1")
        if entry.get("subresource") == "status" or (
            isinstance(fields, Mapping) and "f:status" in fields
        ):
            found.append(entry)
    return found


def other_status_writers(managed_fields: object, ours: str = OURS) -> tuple[str, ...]:
    """The field managers other than `ours` that wrote the object's status."""
    return tuple(sorted({e["manager"] for e in _status_entries(managed_fields)} - {ours}))


def last_status_writer(managed_fields: object) -> str | None:
    """The manager of the newest status write (by its entry's `time`; ours on a tie)."""
    entries = _status_entries(managed_fields)
    if not entries:
        return None
    newest = max(entries, key=lambda e: (str(e.get("time") or ""), e["manager"] == OURS))
    return str(newest["manager"])
