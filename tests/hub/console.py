"""The ACM console's add-on mapping, restated here on its own as the oracle the tests hold the
project to (the console's frontend, `getDisplayStatus` and `getDisplayMessage`): the first
condition of each type; `Disabled` only when the status has no `conditions` at all; then
Degraded, Progressing, Available when `True`; Unknown when Available is `Unknown`; Progressing
with no message when any of the three is `False`; else Unknown, "Unknown"."""

from __future__ import annotations

from typing import Any


def shown(conditions: list[dict[str, Any]] | None) -> tuple[str, str]:  # noqa: PLR0911 - a case a line
    if conditions is None:
        return "Disabled", ""
    first: dict[str, dict[str, Any]] = {}
    for c in conditions:
        first.setdefault(c["type"], c)
    degraded, progressing, available = (
        first.get(t, {}) for t in ("Degraded", "Progressing", "Available")
    )
    if degraded.get("status") == "True":
        return "Degraded", degraded.get("message") or ""
    if progressing.get("status") == "True":
        return "Progressing", progressing.get("message") or ""
    if available.get("status") == "True":
        return "Available", available.get("message") or ""
    if available.get("status") == "Unknown":
        return "Unknown", available.get("message") or ""
    if "False" in (available.get("status"), progressing.get("status"), degraded.get("status")):
        return "Progressing", ""
    return "Unknown", "Unknown"
