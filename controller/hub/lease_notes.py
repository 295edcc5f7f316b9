"""What the leading hub side keeps on its Lease: when its worker last queued every cluster (the
resync) and how often it does. `check hub` runs as an admin who cannot reach the pods; a
replica that holds the Lease while its worker has stopped shows there as a resync long past."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Final

__all__ = ["LAST_RESYNC", "RESYNC_SECONDS", "last_resync", "resync_notes"]

LAST_RESYNC: Final = "addon-status.open-cluster-management.io/last-resync"
RESYNC_SECONDS: Final = "addon-status.open-cluster-management.io/resync-seconds"


def resync_notes(at: datetime | None, every: float) -> dict[str, str]:
    """The annotations for a resync at `at` (none before the first)."""
    if at is None:
        return {}
    return {LAST_RESYNC: at.strftime("%Y-%m-%dT%H:%M:%SZ"), RESYNC_SECONDS: str(round(every))}


def last_resync(annotations: Mapping[str, str]) -> tuple[datetime, float] | None:
    """When the holder last resynced and its interval; None when it does not say (an older
    hub side, or none yet) or says something unreadable."""
    try:
        at = datetime.fromisoformat(annotations[LAST_RESYNC])
        every = float(annotations[RESYNC_SECONDS])
    except (KeyError, ValueError):
        return None
    return (at, every) if at.tzinfo is not None and every > 0 else None
