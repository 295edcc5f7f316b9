"""The addon's history (docs/spec.md §9): the last `historyLimit` changes of its True
standard type or of its reason, newest first.

It is computed with the conditions, so an entry goes out in the same status write as the change
it records, never in a write of its own. Only the True type and its reason count: a heartbeat, a
refused report, a generation change or a new message leave both as they were and add nothing.
The first status computed for an addon (no standard condition stored yet) starts it.
"""

from __future__ import annotations

from datetime import datetime

from statemachines.conditions import Condition, standard_true
from statemachines.size import HISTORY_MESSAGE, cut
from statemachines.state import HistoryEntry

__all__ = ["moved", "recorded"]


def moved(
    before: tuple[Condition, ...], after: tuple[Condition, ...]
) -> tuple[Condition | None, Condition] | None:
    """(the True standard condition before, the one after) when the addon moved: its True
    standard type or that condition's reason changed (or it has one for the first time);
    None when it did not."""
    old, new = standard_true(before), standard_true(after)
    if new is None or (old is not None and (old.type, old.reason) == (new.type, new.reason)):
        return None
    return old, new


def recorded(
    history: tuple[HistoryEntry, ...],
    before: tuple[Condition, ...],
    after: tuple[Condition, ...],
    now: datetime,
    *,
    limit: int,
) -> tuple[HistoryEntry, ...]:
    """`history` with the change from `before` to `after` in front, if the True standard type or
    its reason changed; at most `limit` entries (0: none)."""
    if limit == 0:
        return ()
    change = moved(before, after)
    if change is None:
        return history[:limit]
    new = change[1]
    message = cut(new.message, HISTORY_MESSAGE)  # docs/spec.md §6
    entry = HistoryEntry(str(new.type), str(new.reason), message, now.replace(microsecond=0))
    return (entry, *history)[:limit]
