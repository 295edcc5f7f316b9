"""The simulated collectors after the play: each keeps saying what it last said.

A real collector reports its state every `reportInterval` for as long as it runs, so the end of
a story is not the end of its collectors: after the play (`Player.follow`) each collector whose
last word is known (the story's last report about it, or one sent by hand since) says it again
whenever `interval` has passed since the controller last heard about it, until the demo ends.
The fleet then stays as the story left it instead of turning stale (docs/spec.md §4) moments
after the play. A collector the story left stale, or never heard about, stays silent until
someone reports about it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from statemachines.config import Config
from statemachines.reports import Report
from statemachines.settings import Settings, format_duration
from statemachines.state import AddonState

__all__ = ["LastWords", "as_sent", "interval", "same"]


def interval(settings: Settings) -> timedelta:
    """How often a collector reports on: its `reportInterval`, or a third of its staleness
    limit when that is shorter, so that two lost reports in a row still do not make it stale
    (the default limit is three intervals)."""
    return min(settings.report_interval, settings.staleness_limit / 3)


@dataclass
class LastWords:
    """Each configured collector's last report, in a scenario step's `report` shape."""

    config: Config
    said: dict[str, dict[str, Any]] = field(default_factory=dict)

    def heard(self, report: Mapping[str, Any]) -> None:
        """`report` was sent: its collector's last word, or every collector's when it names
        none (the operator's, to all: each collector is then said to be where it put them)."""
        named = report.get("collector")
        names = [named] if named else [c.name for c in self.config.collectors]
        for name in names:
            if self.config.spec(name) is not None:
                self.said[name] = {**report, "collector": name}

    def every(self, report: Mapping[str, Any]) -> str:
        """How often `report`'s collector says it again, as a duration is written."""
        return format_duration(interval(self.config.settings[report["collector"]]))

    def due(self, state: AddonState) -> list[tuple[datetime, dict[str, Any]]]:
        """Each collector's next report again, earliest first: `interval` after the controller
        last heard about it; none for a stale collector (silent as the story left it)."""
        out = []
        for name, report in self.said.items():
            collector = state.collector(name)
            if collector.stale or collector.heard_at is None:
                continue
            out.append((collector.heard_at + interval(self.config.settings[name]), report))
        return sorted(out, key=lambda due: (due[0], str(due[1]["collector"])))


def as_sent(report: Report, reason: str) -> dict[str, Any]:
    """A judged report in the shape of a scenario step's `report`."""
    return {
        "collector": report.collector,
        "reason": reason,
        "message": report.message,
        "observed_generation": report.observed_generation,
        "version": report.version,
    }


def same(sent: Mapping[str, Any], own: Mapping[str, Any]) -> bool:
    """The player's own report (its reason may be spelled by an alias: not compared)."""
    return all(sent.get(k) == own.get(k) for k in ("collector", "message", "observed_generation"))
