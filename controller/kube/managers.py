"""Who wrote an object's status, from its `managedFields`: the API server's record of each field
manager's writes (`manager`: the writer's `fieldManager`, else its User-Agent up to the first
`/`; `subresource`: "status" for a status write). The project's processes are `OURS` (their
User-Agent, `controller.kube.connection`); another writer of a status the project owns is told,
never fought (docs/spec.md §12.1)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["OURS", "other_status_writers", "status_writers_of"]

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


def other_status_writers(
    managed_fields: object, ours: str = OURS, *, since: str = ""
) -> tuple[str, ...]:
    """The field managers other than `ours` that wrote the object's status (at `since` or
    later, an RFC 3339 time: an entry keeps the fields a manager set and no one changed since,
    so a writer long gone may still hold one)."""
    return tuple(sorted(
        {e["manager"] for e in _status_entries(managed_fields)
         if str(e.get("time") or "9") >= since} - {ours}
    ))  # fmt: skip


def status_writers_of(old_fields: object, new_fields: object) -> tuple[str, ...]:
    """The managers whose status entry a write made or stamped anew (its `time`): the writer
    of that write. The field sets are not compared: a write takes fields from the entries of
    others. A manager's second write within the second of its first is not seen here."""
    before = {e["manager"]: e.get("time") for e in _status_entries(old_fields)}
    return tuple(sorted(
        e["manager"] for e in _status_entries(new_fields)
        if e["manager"] not in before or before[e["manager"]] != e.get("time")
    ))  # fmt: skip
