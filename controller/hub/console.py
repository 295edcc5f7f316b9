"""What the ACM console shows for a ManagedClusterAddOn (docs/spec.md §12.3): one word and one
message, read from three condition types in a fixed order. The demo's fleet line and `fleet`'s
docs use it; the tests restate the console's mapping on their own and hold this to it.

The console reads only `Degraded`, `Progressing` and `Available`: `Disabled`, `NotSupported`,
`RegistrationApplied`, ... are never shown, and it says `Disabled` only for an addon whose
status has no `conditions` at all, which OCM never leaves (an empty list is `Unknown`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["CONSOLE_WORDS", "console_view"]

CONSOLE_WORDS: Final = ("Disabled", "Degraded", "Progressing", "Available", "Unknown")


def console_view(conditions: object) -> tuple[str, str]:
    """(the word, the message) the console shows for a ManagedClusterAddOn's
    `status.conditions` (None: the status has none, which is not an empty list)."""
    if conditions is None:
        return "Disabled", ""
    found: dict[str, Mapping[str, Any]] = {}
    listed = (
        conditions if isinstance(conditions, Sequence) and not isinstance(conditions, str) else []
    )
    for condition in listed:
        if isinstance(condition, Mapping) and isinstance(kind := condition.get("type"), str):
            found.setdefault(kind, condition)

    def status(kind: str) -> object:
        return (found.get(kind) or {}).get("status")

    def message(kind: str) -> str:
        text = (found.get(kind) or {}).get("message")
        return text if isinstance(text, str) else ""

    for kind in ("Degraded", "Progressing", "Available"):
        if status(kind) == "True":
            return kind, message(kind)
    if status("Available") == "Unknown":
        return "Unknown", message("Available")
    if "False" in (status("Degraded"), status("Progressing"), status("Available")):
        return "Progressing", ""
    return "Unknown", "Unknown"
