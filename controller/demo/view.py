"""What the demo prints while a scenario plays: one line per report with its verdict, one line
for each change of the addon's status on the spoke CR and on the hub copy, and one for each
change of the watched objects' counted health (`status.resources`), stamped with the scenario
time at which it happened."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, TextIO

from statemachines.conditions import standard_true_in

__all__ = ["View", "addon_summary", "collectors_summary", "resources_summary", "stamp"]


def stamp(offset: timedelta) -> str:
    """`  5m00s`: a scenario offset as the demo's lines show it."""
    seconds = int(offset.total_seconds())
    return f"{seconds // 60:3d}m{seconds % 60:02d}s"


def addon_summary(status: Mapping[str, Any]) -> str:
    """`Degraded (ForwardFailure)`: the standard condition that is True, or what is missing."""
    true = standard_true_in(status.get("conditions"))
    if not true:
        return "no status yet"
    return f"{true[0]['type']} ({true[0]['reason']})"


def collectors_summary(status: Mapping[str, Any]) -> str:
    parts = []
    for c in status.get("collectors") or []:
        reason = "ReportsStale" if c.get("stale") else c.get("reason", "no reason")
        pending = f", {c['pendingReason']} pending" if c.get("pendingReason") else ""
        parts.append(f"{c['name']} {c['state']} ({reason}{pending})")
    return "; ".join(parts)


_PRINTING = threading.Lock()
_HEALTH = {"True": "Healthy", "False": "Unhealthy", "Unknown": "Unknown"}


def resources_summary(status: Mapping[str, Any]) -> str:
    """`metrics-collector-deployment Healthy (Current, Failed pending)`, per watched object."""
    parts = []
    for entry in status.get("resources") or []:
        [condition, *_] = entry.get("conditions") or [{}]
        health = _HEALTH.get(condition.get("status", ""), "not observed")
        pending = entry.get("pending")
        held = f", {pending['reason']} pending" if pending else ""
        parts.append(f"{entry['name']} {health} ({condition.get('reason', '')}{held})")
    return "; ".join(parts)


class View:
    """Prints lines stamped with the scenario time (from the player's thread only), after a
    `label` naming the spoke when the demo runs several; remembers what the CRs last looked
    like so that only changes are printed."""

    def __init__(
        self, now: Callable[[], datetime], start: datetime, out: TextIO, *, label: str = ""
    ) -> None:
        self._now = now
        self._start = start
        self._out = out
        self._label = f"{label} " if label else ""
        self.latest: dict[str, str] = {}  # "spoke" / "hub" / "health" -> the last line printed

    def line(self, kind: str, text: str) -> None:
        # The players of a fleet print from threads of their own, on one clock: read it and
        # write the line as one step, so that the times printed never go back.
        with _PRINTING:
            when = stamp(self._now() - self._start)
            self._out.write(f"[{when}] {self._label}{kind:<7} {text}\n")
            self._out.flush()

    @staticmethod
    def summary(where: str, status: Mapping[str, Any]) -> str:
        """The addon's condition, and on the spoke each collector's state."""
        detail = collectors_summary(status) if where == "spoke" else ""
        return f"{addon_summary(status):<32} {detail}".rstrip()

    def status(self, where: str, status: Mapping[str, Any]) -> None:
        """Print the CR's status at `where` if it changed since it was last printed."""
        text = self.summary(where, status)
        if self.latest.get(where) != text:
            self.latest[where] = text
            self.line(where, text)
        health = resources_summary(status) if where == "spoke" else ""
        if health and self.latest.get("health") != health:
            self.latest["health"] = health
            self.line("health", health)
