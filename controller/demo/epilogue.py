"""The fleet's epilogue (`demo --clusters N`, N >= 2): once every spoke's story is over, the path
from two spokes to the hub breaks and mends, on the fleet's clock, a minute at a time:

- 1m after the stories: cluster1's agent stops (its Deployment has no ready replica), and
  cluster2 is lost (its klusterlet stops renewing the cluster's Lease on the hub);
- OCM says so as OCM v1.3 does: cluster1's `Available=False` (`ProbeUnavailable`) at once,
  cluster2's cluster and every MCA of it `Unknown` once five lease durations (5m) have passed
  without a renewal;
- 7m: cluster1's agent starts again; 10m: cluster2's klusterlet comes back;
- 14m: the end, the windows of whoever judges these (the hub side) long past.

The spokes' own clocks stand where their stories ended (with `--duration` they catch up
afterwards, `Player.follow`, their collectors reporting on); the hub, OCM and the klusterlets
run on. Each of OCM's steps is checked as it comes (within
`patience` real seconds, on what the demo's viewer of the hub sees), and every change OCM or
the hub side makes is printed as it is seen (`fleet_line`): the console's word for each cluster
shows whatever the hub side wrote, without the demo expecting any verdict of it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from controller.demo.fleet import Fleet
from controller.demo.fleet_line import FleetLine
from controller.demo.ocm_model import (
    CLUSTER_AVAILABLE,
    GRACE_LEASES,
    LEASE,
    LEASE_NAME,
    condition,
)
from controller.demo.view import View
from controller.kube.api import ApiResource
from statemachines.settings import format_duration

__all__ = ["EVENTS", "LENGTH", "play_epilogue"]

AGENT_STOPS, AGENT_STARTS, CLUSTER_LOST, CLUSTER_BACK = (
    "agent-stops",
    "agent-starts",
    "lost",
    "back",
)
MINUTE: Final = timedelta(minutes=1)
LENGTH: Final = 14 * MINUTE


@dataclass(frozen=True)
class Event:
    at: timedelta  # after the stories' end
    spoke: int  # 0: cluster1
    what: str


EVENTS: Final = (
    Event(1 * MINUTE, 0, AGENT_STOPS),
    Event(1 * MINUTE, 1, CLUSTER_LOST),
    Event(7 * MINUTE, 0, AGENT_STARTS),
    Event(10 * MINUTE, 1, CLUSTER_BACK),
)
_SAID: Final = {
    AGENT_STOPS: ("agent", "stops: its Deployment addon-status-controller has no ready replica"),
    AGENT_STARTS: ("agent", "starts again: its Deployment has a ready replica"),
    CLUSTER_LOST: ("cluster", "lost: its klusterlet stops renewing the cluster's Lease on the hub"),
    CLUSTER_BACK: ("cluster", "back: its klusterlet renews its Lease and says it is available"),
}


@dataclass
class _Expected:
    cluster: str
    due: datetime
    what: str
    holds: Callable[[], bool]


def play_epilogue(
    fleet: Fleet,
    lines: FleetLine,
    views: Mapping[str, View],
    *,
    scale: float | None,
    stop: threading.Event,
    patience: float = 10.0,
) -> list[str]:
    """Plays the epilogue; its failures (an OCM step not seen in time), [] when all held."""
    start = fleet.clock()
    pending: list[_Expected] = []
    failures: list[str] = []
    for minute in range(1, int(LENGTH / MINUTE) + 1):
        moment = start + minute * MINUTE
        if scale is not None and stop.wait(MINUTE.total_seconds() / scale):
            break
        if stop.is_set():
            break
        fleet.clock.move_to(moment)
        for event in (e for e in EVENTS if e.at == minute * MINUTE):
            pending += _happen(fleet, event, views, moment, lines)
        for expected in [e for e in pending if e.due <= moment]:
            pending.remove(expected)
            if not _within(expected.holds, patience):
                when = format_duration(moment - start)
                failures.append(f"the epilogue, {when} after the stories: {expected.cluster}: "
                                f"{expected.what} not seen within {patience:g}s")  # fmt: skip
        fleet.writers.settled(patience)
        lines.show()
    return failures


def _happen(
    fleet: Fleet, event: Event, views: Mapping[str, View], moment: datetime, lines: FleetLine
) -> list[_Expected]:
    """Make `event` happen; what OCM must then say, and when."""
    demo = fleet.spokes[event.spoke]
    kind, text = _SAID[event.what]
    views[demo.cluster].line(kind, text)
    cluster = demo.cluster

    def available(status: str) -> Callable[[], bool]:
        return lambda: _status(lines.addon(cluster), "Available") == status

    if event.what == AGENT_STOPS:
        demo.stop_agent()
        return [_Expected(cluster, moment, "OCM's Available=False", available("False"))]
    if event.what == AGENT_STARTS:
        demo.start_agent()
        return [_Expected(cluster, moment, "OCM's Available=True", available("True"))]
    if event.what == CLUSTER_LOST:
        demo.klusterlet.stop()
        lease = _lease(fleet, cluster)
        renewed = (lease.get("spec") or {}).get("renewTime", "")
        spec = lines.cluster(cluster).get("spec") or {}
        grace = timedelta(seconds=GRACE_LEASES * int(spec.get("leaseDurationSeconds", 60)))
        due = datetime.fromisoformat(renewed.replace("Z", "+00:00")) + grace

        def lost() -> bool:
            state = _status(lines.cluster(cluster), CLUSTER_AVAILABLE)
            return state == "Unknown" and available("Unknown")()

        return [_Expected(cluster, max(due, moment), "the cluster and its addon Unknown", lost)]
    demo.klusterlet.start()

    def back() -> bool:
        return _status(lines.cluster(cluster), CLUSTER_AVAILABLE) == "True" and available("True")()

    return [_Expected(cluster, moment, "the cluster and its addon Available again", back)]


def _lease(fleet: Fleet, cluster: str) -> dict[str, Any]:
    lease: ApiResource = LEASE
    return fleet.hub.get_object(lease.group, lease.version, lease.plural, cluster,
                                LEASE_NAME) or {}  # fmt: skip


def _status(obj: Mapping[str, Any], kind: str) -> object:
    return condition((obj.get("status") or {}).get("conditions"), kind).get("status")


def _within(holds: Callable[[], bool], patience: float) -> bool:
    deadline = time.monotonic() + patience
    while not holds():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.005)
    return True
