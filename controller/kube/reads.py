"""How much of each object a list or a watch decodes (`Reads`): the whole `object`, or its
`conditions` (`conditions_only`), the rest skipped unread (`controller.kube.listing`). A hub
copy near the §6 budget is 230 KB; a reader of its conditions never builds the other 99% into
Python objects."""

from __future__ import annotations

from typing import Any, Literal

__all__ = ["Reads", "conditions_only", "writers_only"]

Reads = Literal["object", "conditions"]


def writers_only(entries: Any) -> Any:
    """Of `metadata.managedFields`, who wrote what part and when: each entry's manager,
    operation, subresource and time, and of its fields only whether it holds `f:status` (who
    else writes a status the project owns: `controller.hub.writers`); no field sets."""
    if not isinstance(entries, list):
        return entries
    kept = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        short = {k: entry[k] for k in ("manager", "operation", "subresource", "time") if k in entry}
        fields = entry.get("fieldsV1")
        if isinstance(fields, dict) and "f:status" in fields:
            short["fieldsV1"] = {"f:status": {}}
        kept.append(short)
    return kept


def conditions_only(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` as a `conditions` reader gets it: apiVersion, kind, metadata with managedFields
    reduced to who wrote (`writers_only`) and status.conditions; a metadata or status that is
    no object is kept as it is, for the reader to refuse."""
    kept: dict[str, Any] = {key: obj[key] for key in ("apiVersion", "kind") if key in obj}
    if "metadata" in obj:
        meta = obj["metadata"]
        kept["metadata"] = (
            {k: writers_only(v) if k == "managedFields" else v for k, v in meta.items()}
            if isinstance(meta, dict) else meta
        )  # fmt: skip
    if "status" in obj:
        status = obj["status"]
        kept["status"] = (
            {k: v for k, v in status.items() if k == "conditions"}
            if isinstance(status, dict) else status
        )  # fmt: skip
    return kept
