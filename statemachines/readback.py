"""What is read back is checked (docs/spec.md §6): a stored status is read field by field, and a
field outside the rules' bounds — a time before 1970 or too late to add the longest window to, a
generation outside 0 ≤ n < 2^63, a list longer than the CRD keeps, a value of the wrong kind —
is taken as absent and noted (`ignored`), never raised: the shell logs each once and counts it,
and the next write replaces it with a valid one. Texts longer than their limit are cut, not
ignored. Pure: the caller hands in the decoded status.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, Final

from statemachines.conditions import parse_time
from statemachines.errors import StoredStateError
from statemachines.size import cut

__all__ = ["EARLIEST", "GENERATION_LIMIT", "Reader"]
# (GENERATION_LIMIT is also the bound of a report's observedGeneration: statemachines.reports)

EARLIEST: Final = datetime(1970, 1, 1, tzinfo=UTC)
GENERATION_LIMIT: Final = 2**63  # an int64, as metadata.generation is
_LAST: Final = datetime.max.replace(tzinfo=UTC)


class Reader:
    """Reads one stored status; `ignored` lists the fields taken as absent, with why.
    `longest` is the longest window a stored time may still have added to it (docs/spec.md §3,
    §4, §8)."""

    def __init__(self, *, longest: timedelta) -> None:
        self.latest = _LAST - longest
        self.ignored: list[StoredStateError] = []

    def ignore(self, where: str, problem: str) -> None:
        self.ignored.append(StoredStateError(where, problem))

    def time(self, value: object, where: str) -> datetime | None:
        """An RFC 3339 time between 1970 and the latest that still takes the longest window."""
        if value is None:
            return None
        try:
            moment = parse_time(str(value)) if isinstance(value, str) else None
        except ValueError:
            moment = None
        if moment is None:
            self.ignore(where, f"{value!r} is not an RFC 3339 time")
        elif not EARLIEST <= moment <= self.latest:
            self.ignore(where, f"{value!r} is outside 1970 to {self.latest:%Y-%m-%d}")
            moment = None
        return moment

    def generation(self, value: object, where: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < GENERATION_LIMIT:
            return value
        self.ignore(where, f"{value!r} is not a generation 0 <= n < 2^63")
        return None

    def items(self, value: object, where: str, *, limit: int) -> list[Any]:
        """The entries of a stored list (none when it is absent); one longer than the CRD keeps
        is absent whole."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.ignore(where, f"expected a list, not {type(value).__name__}")
            return []
        if len(value) > limit:
            self.ignore(where, f"{len(value)} entries; the CRD keeps at most {limit}")
            return []
        return value

    def text(self, value: object, where: str, *, limit: int, default: str = "") -> str:
        """A string, cut to `limit` characters; `default` for one that is not a string."""
        if value is None:
            return default
        if not isinstance(value, str):
            self.ignore(where, f"expected a string, not {type(value).__name__}")
            return default
        return cut(value, limit)

    def mapping(self, value: object, where: str) -> dict[str, Any] | None:
        if value is None:
            return None
        if not isinstance(value, dict):
            self.ignore(where, f"expected an object, not {type(value).__name__}")
            return None
        return value
