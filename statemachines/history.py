"""The addon's history (section 9 of the rules): the last `historyLimit` changes of its True
standard type or of its reason, newest first.

It is computed with the conditions, so an entry goes out in the same status write as the change
it records, never in a write of its own. Only the True type and its reason count: a heartbeat, a
refused report, a generation change or a new message leave both as they were and add nothing.
The first status computed for an addon (no standard condition stored yet) starts it.
"""

from __future__ import annotations

from datetime import datetime

from statemachines.conditions import Condition
from statemachines.state import HistoryEntry
from statemachines.vocabulary import ConditionType

__all__ = ["recorded", "true_standard"]

_STANDARD = frozenset(t.value for t in ConditionType)


def true_standard(conditions: tuple[Condition, ...]) -> Condition | None:
    """The standard condition that is True, if the conditions have one."""
    return next((c for c in conditions if c.type in _STANDARD and c.status == "True"), None)


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
    old, new = true_standard(before), true_standard(after)
    if new is None or (old is not None and (old.type, old.reason) == (new.type, new.reason)):
        return history[:limit]
    entry = HistoryEntry(str(new.type), str(new.reason), new.message, now.replace(microsecond=0))
    return (entry, *history)[:limit]
