"""This replica's role, and the one question every writer asks it: may I write now?

Leader election sets the verdict (`elect`); the Lease's own clock can take it back before the
verdict arrives (`lease_held`: leader election's `is_leader`, which turns False the moment the
renew deadline passes, even if the election thread is stuck). A single replica without
election leads from start to stop. The worker asks before judging a report and before every
status write; the metrics read the same answer.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["Role"]


class Role:
    """Leader or follower; safe to read from any thread."""

    def __init__(self, *, elected: bool = True, lease_held: Callable[[], bool] | None = None):
        self._elected = elected
        self._term = 1 if elected else 0
        self._lease_held = lease_held or (lambda: True)

    @property
    def elected(self) -> bool:
        """Leader election's last verdict (True without election)."""
        return self._elected

    @property
    def term(self) -> int:
        """Counts the times this replica became leader: what the worker rebuilt in one term
        says nothing about the next (another replica may have written in between)."""
        return self._term

    def elect(self, leader: bool) -> None:
        if leader and not self._elected:
            self._term += 1
        self._elected = leader

    def may_write(self) -> bool:
        """Elected, and the Lease still held right now."""
        return self._elected and self._lease_held()
