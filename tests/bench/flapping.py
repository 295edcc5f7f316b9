"""The flapping fleet of `fleet.py`: the signal, N spokes on the real core, and the playback
of the signal in simulated-time order on an accelerated clock.

Kept apart from the hub side so that `fleet.py --simulate-only` and the measured run play
exactly the same reports through exactly the same core: the figures they share must agree.
Pure apart from `play`'s pacing: no server, no thread.
"""

from __future__ import annotations

import heapq
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from random import Random
from typing import Any

from controller.spoke.replication import CopyMode, hub_status_for, in_sync
from statemachines import AddonState, Config, Report, advance, apply, start, to_status
from statemachines.vocabulary import Reason
from tests.clock import T0

__all__ = [
    "COLLECTORS",
    "SHAPE",
    "CountingHub",
    "Event",
    "Played",
    "Publish",
    "Signal",
    "Spoke",
    "fleet_signal",
    "play",
]

COLLECTORS = ("metrics-collector", "uwl-metrics-collector")
HEARTBEAT = 120.0  # seconds between a collector's repeated reports
HEALTHY, SHORT, LONG, LONG_SHARE = (60.0, 480.0), (20.0, 360.0), (660.0, 1500.0), 0.2
SHAPE = (
    "each collector: healthy 1-8 min, then an outage of 20 s-6 min (80%) or 11-25 min (20%);"
    " its reason repeated every 2 min"
)
Publish = Callable[[Mapping[str, Any]], None]


# --- the flapping signal --------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Event:
    at: float  # simulated seconds after the measured period starts
    spoke: int
    report: Report = field(compare=False)


@dataclass
class Signal:
    events: list[Event]
    outages: int
    long_outages: int


def collector_signal(rng: Random, spoke: int, collector: str, seconds: float) -> Signal:
    """Healthy, outage, healthy, ...: a report at every change and every HEARTBEAT between."""
    events, outages, longer = [], 0, 0
    at, failing = 0.0, False
    while at < seconds:
        if failing:
            is_long = rng.random() < LONG_SHARE
            length = rng.uniform(*(LONG if is_long else SHORT))
            outages, longer = outages + 1, longer + is_long
            report = Report(Reason.FORWARD_FAILURE, collector, "remote write 503")
        else:
            length = rng.uniform(*HEALTHY)
            report = Report(Reason.FORWARD_SUCCESSFUL, collector, "metrics sent")
        end = min(at + length, seconds)
        beat = at
        while beat < end:
            events.append(Event(beat, spoke, report))
            beat += HEARTBEAT
        at, failing = end, not failing
    return Signal(events, outages, longer)


def fleet_signal(clusters: int, seconds: float, seed: int) -> Signal:
    """The same signal for a given seed whatever else runs: one RNG per collector."""
    parts = [
        collector_signal(Random(f"{seed}/{spoke}/{name}"), spoke, name, seconds)
        for spoke in range(clusters)
        for name in COLLECTORS
    ]
    events = sorted(e for part in parts for e in part.events)
    return Signal(events, sum(p.outages for p in parts), sum(p.long_outages for p in parts))


# --- one spoke: the real core, a publisher ---------------------------------------------------


class Spoke:
    """One spoke's core state; every change of its status goes to `publish`, as the worker's
    `on_status_written` hook would hand it over after the spoke write."""

    def __init__(self, config: Config, publishers: Sequence[Publish]) -> None:
        self.config, self.publishers = config, publishers
        self.state: AddonState = start(config, T0)
        self.wake: float | None = None  # simulated seconds of the next timer
        self.changes = 0
        for report in (
            Report(Reason.UPDATE_SUCCESSFUL, None, "deployed"),
            *(Report(Reason.FORWARD_SUCCESSFUL, c, "metrics sent") for c in COLLECTORS),
        ):
            self.state = apply(self.state, report, T0, config=config).state

    def settle(self) -> None:
        """Publish the warm-up status (not counted)."""
        for publish in self.publishers:
            publish(to_status(self.state))

    def handle(self, report: Report | None, at: float) -> float | None:
        """Apply a report (or let time pass); publish a change; the next timer, if new."""
        now = T0 + timedelta(seconds=at)
        if report is None:
            outcome = advance(self.state, now, config=self.config)
        else:
            outcome = apply(self.state, report, now, config=self.config)
        self.state = outcome.state
        if outcome.changed:
            self.changes += 1
            status = to_status(self.state)
            for publish in self.publishers:
                publish(status)
        wake = None if outcome.next_wakeup is None else _seconds(outcome.next_wakeup)
        if wake == self.wake:
            return None
        self.wake = wake
        return wake


def _seconds(moment: datetime) -> float:
    return (moment - T0).total_seconds()


class CountingHub:
    """An in-memory hub copy judged by the replicator's own pure decisions: one write for
    every published status that the copy does not already match (no coalescing)."""

    def __init__(self, mode: CopyMode) -> None:
        self.mode = mode
        self.copy: dict[str, Any] = {}
        self.writes = 0

    def __call__(self, status: Mapping[str, Any]) -> None:
        if not in_sync(status, self.copy, self.mode):
            self.copy = hub_status_for(status, self.copy, self.mode)
            self.writes += 1


# --- playing the signal on the (accelerated) clock -------------------------------------------


@dataclass
class Played:
    real_seconds: float = 0.0
    max_behind: float = 0.0  # simulated seconds the driver fell behind the accelerated clock


def play(signal: Signal, spokes: list[Spoke], *, seconds: float, speed: float | None) -> Played:
    """Feed every report and fire every timer in simulated-time order; with `speed`, wait for
    the accelerated clock before each event, so the hub sees the fleet's real pace."""
    played, wakes = Played(), list[tuple[float, int]]()
    events, index = signal.events, 0
    begin = time.perf_counter()
    while True:
        next_report = events[index].at if index < len(events) else seconds
        if wakes and wakes[0][0] <= next_report and wakes[0][0] < seconds:
            at, spoke = heapq.heappop(wakes)
            if spokes[spoke].wake != at:
                continue  # superseded by a later timer of the same spoke
            report = None
        elif index < len(events):
            at, spoke, report = next_report, events[index].spoke, events[index].report
            index += 1
        else:
            break
        if speed is not None:
            ahead = begin + at / speed - time.perf_counter()
            if ahead > 0.002:
                time.sleep(ahead)
            played.max_behind = max(played.max_behind, -ahead * speed)
        wake = spokes[spoke].handle(report, at)
        if wake is not None:
            heapq.heappush(wakes, (wake, spoke))
    played.real_seconds = time.perf_counter() - begin
    return played
