"""Another writer of the hub copy's status (docs/spec.md §12.1): the copy is the agent's alone,
so a status write by any other field manager (ACM's endpoint operator left running where the
project was adopted, an admin's `kubectl edit`) means the console may show someone else's word.

The API server records each writer in the object's `managedFields` (`manager`: the writer's
`fieldManager`, else its User-Agent up to the first `/`; `subresource`: "status" for a status
write). The hub side does not fight that writer: it says so once in its log and in the
`Degraded` it owns on the cluster's `ManagedClusterAddOn` (reason `StatusWrittenByAnother`),
held for `HOLD` after the writer was last seen, since the agent's next write takes the
conditions back and the other writer's entry goes with it.

Pure rules, no I/O; `Writers` keeps what was seen per cluster.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from controller.kube.managers import OURS, other_status_writers
from statemachines.conditions import format_time

__all__ = ["ANOTHER_WRITER", "HOLD", "OURS", "Writers", "other_status_writers"]

log = logging.getLogger(__name__)

ANOTHER_WRITER: Final = "StatusWrittenByAnother"
HOLD: Final = timedelta(minutes=10)
"""Twice the 5 minutes after which ACM's endpoint operator writes again: a forgotten one that
keeps writing stays seen between its writes."""


@dataclass(slots=True)
class _Seen:
    writers: tuple[str, ...]
    last: datetime


class Writers:
    """Per cluster, the other writers of its hub copy's status seen within `HOLD`."""

    def __init__(self, copy_name: str, hold: timedelta = HOLD) -> None:
        self._copy, self._hold = copy_name, hold
        self._seen: dict[str, _Seen] = {}

    def held(self, cluster: str, writers: Sequence[str], now: datetime) -> tuple[str, ...]:
        """The other writers that count for `cluster` now (`writers`: seen on its copy now);
        told once in the log when they first count, and when they no longer do."""
        before = self._seen.get(cluster)
        if writers:
            names = tuple(sorted({*writers, *(before.writers if before else ())}))
            self._seen[cluster] = _Seen(names, now)
            if before is None or before.writers != names:
                log.warning(
                    "cluster %s: the hub copy %s is also written by %s (managedFields), not only "
                    "by the agent; not written over: the console says so in Degraded (%s)",
                    cluster, self._copy, ", ".join(names), ANOTHER_WRITER,
                )  # fmt: skip
            return names
        if before is None:
            return ()
        if now - before.last < self._hold:
            return before.writers
        del self._seen[cluster]
        log.info("cluster %s: no other writer of the hub copy %s since %s", cluster,
                 self._copy, format_time(before.last))  # fmt: skip
        return ()

    def until(self, cluster: str) -> datetime | None:
        """When `cluster`'s writers stop counting unless seen again."""
        seen = self._seen.get(cluster)
        return None if seen is None else seen.last + self._hold


def degraded_by(
    writers: Sequence[str], conditions: list[dict[str, Any]], copy_name: str, now: datetime
) -> list[dict[str, Any]]:
    """`conditions` with the `Degraded` another writer leads to (its transition kept when it
    was already so)."""
    before = next((c for c in conditions if c.get("type") == "Degraded"), None)
    same = before is not None and before.get("status") == "True"
    since = before.get("lastTransitionTime") if same and before else format_time(now)
    chosen = {
        "type": "Degraded",
        "status": "True",
        "reason": ANOTHER_WRITER,
        "message": f"the hub copy {copy_name} is also written by {', '.join(writers)}, not only "
        "by the agent: what it says may not be the addon's own status (docs/operations.md)",
        "lastTransitionTime": since,
    }
    return [c for c in conditions if c.get("type") != "Degraded"] + [chosen]
