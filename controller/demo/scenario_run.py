"""A scenario played end to end through the running demo, every `expect` checked on the real CR.

The report API, the worker, the status writer, the watch and hub replication run for real; only
the controller's clock belongs to the player. It stands still at scenario times and moves only
between them, as `simulate`'s fake clock does, so that no time scale changes a verdict or a
transition time. For each step, in the order of the rules (docs/reference/scenarios.md):

1. the timers due at or before its `at` fire first, each at its own due time: the player moves
   the clock to the worker's next wake-up and has the worker fire it, until none is left;
2. the clock stands at `at`; the step's generation (if any) is written to the spoke CR, and the
   player waits until the worker has seen it through its watch; then the step's object (if
   any) is written to (or deleted from) the spoke, and the player waits until the worker has
   seen that resourceVersion through the object's watch; then the step's report goes
   over HTTP, and the report API's answer is the step's verdict (an answer other than a refusal
   comes once the CR holds its effect);
3. `expect` is checked against the spoke CR's status as the API server stores it, by the
   checker `simulate` uses, and the hub copy must follow: equal to the spoke's status as the
   replication mode copies it, within `patience` seconds.

With a time scale, the player waits the scaled distance before each move of the clock (a show);
without, the next move comes as soon as the worker has handled everything (a check).

After the play, `follow` keeps the demo alive until it is stopped (`--duration`, Ctrl-C): the
clock runs on at the time scale (real time without one), so windows fire; the collectors report
on, each its last word at its interval (`last_words`), so the fleet stays as the story left it;
each report someone else sends (curl, a collector) is printed with its verdict, and each change
of the CRs as it happens.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from controller.demo.last_words import LastWords, as_sent, same
from controller.demo.scenario_file import EPOCH, ObjectChange, Play, Scenario, plays
from controller.demo.view import View, addon_summary, stamp
from controller.reporter.client import ReportRejected, ReportUnavailable
from controller.spoke.replication import CopyMode, projection
from controller.spoke.worker import Worker
from statemachines import next_wakeup
from statemachines.conditions import parse_time
from statemachines.errors import AddonStatusError
from statemachines.reports import Report, Verdict
from statemachines.settings import format_duration

__all__ = ["PlayError", "Player", "Result", "SteppedClock", "System"]


_HEARD_EVERY = 0.1  # real seconds between looks for reports sent by hand, while a step waits


class SteppedClock:
    """The controller's clock during a scenario: the worker reads it, only the player moves it.
    What must happen as time passes (a klusterlet's renewals) is told before each move
    (`before_move(moment)`), what waits for a time (OCM's requeues) after it (`after_move()`)."""

    def __init__(self, start: datetime) -> None:
        self._now = start
        self.before_move: list[Callable[[datetime], None]] = []
        self.after_move: list[Callable[[], None]] = []

    def __call__(self) -> datetime:
        return self._now

    def move_to(self, moment: datetime) -> None:
        if moment < self._now:
            raise ValueError(f"the scenario clock never goes back ({moment} < {self._now})")
        for before in self.before_move:
            before(moment)
        self._now = moment
        for after in self.after_move:
            after()


class PlayError(AddonStatusError):
    """The controller did not settle in time: the run cannot go on deterministically."""


@dataclass(frozen=True)
class System:
    """The running demo as the player drives and reads it."""

    worker: Worker
    report: Callable[..., dict[str, Any]]  # ReportClient.report
    spoke_status: Callable[[], Mapping[str, Any]]  # the spoke CR's status as stored
    hub_status: Callable[[], Mapping[str, Any]]  # the hub copy's status as stored
    hub_copy: CopyMode
    change_generation: Callable[[int], None]  # the spoke CR's spec changed: its generation
    # A watched object written or deleted on the spoke: the resourceVersion its watch delivers
    # (None: nothing changed).
    change_object: Callable[[ObjectChange], str | None] = lambda change: None
    # The status the expectations are checked against, from the spoke CR's: with what a profile
    # keeps beside the CR (acm: Ready, history, versions... in the bookkeeping ConfigMap).
    checked: Callable[[Mapping[str, Any]], Mapping[str, Any]] = lambda status: status
    # The reports answered since the last call, whoever sent them, with their verdicts.
    heard: Callable[[], Sequence[tuple[Report, Verdict]]] = lambda: ()


@dataclass
class Result:
    steps: int
    played: int = 0
    checked: int = 0  # steps with an `expect`
    reports: int = 0
    refused: int = 0
    failures: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failures


class Player:
    """Plays one scenario once; see the module docstring for the order of each step."""

    def __init__(
        self,
        scenario: Scenario,
        system: System,
        *,
        clock: SteppedClock,
        view: View,
        scale: float | None,
        stop: threading.Event,
        patience: float = 10.0,
        start: datetime = EPOCH,
        origin: datetime | None = None,
    ) -> None:
        """`scale`: simulated seconds per real second, None for no waiting; `patience`: the
        real seconds the worker may take to settle and the hub copy to follow; `start`: the
        scenario's time zero on `clock`; `origin`: the fleet's, when this spoke starts later
        (with a scale, its play starts that much later in real time too)."""
        self._scenario = scenario
        self._start = start
        self._origin = origin or start
        self.system = system  # the running agent's: replaced when the story restarts it
        self._clock = clock
        self._view = view
        self._scale = scale
        self._stop = stop
        self._patience = patience
        self._spoke: Mapping[str, Any] = {}  # the spoke CR's status as last looked at
        self.clock = clock
        self.started = False  # its play began (a later spoke of a fleet waits for its start)
        self.by_hand = Result(0)  # the reports sent by hand, counted for the summary too
        self.again = Result(0)  # the collectors' reports after the play (their last words)
        self._words = LastWords(scenario.config)

    def run(self) -> Result:
        steps = plays(self._scenario)
        result = Result(len(steps))
        if not self._wait_until(self._start, since=self._origin):
            return result
        self.started = True
        self._settle()
        status = self._look()  # as the controller wrote it on starting
        result.failures += self._hub_follows(status, "at the start")
        for play in steps:
            if not self._advance_to(play, result):
                break
            if play.generation is not None:
                self._change_generation(play.generation)
            if play.object is not None:
                self._change_object(play.object)
            answer = self._send(play, result)
            self._settle()
            status = self._look()
            checked = self.system.checked(status)
            failures = list(play.check(self._scenario.config, answer, checked, self._offset))
            failures += self._hub_follows(status, play.where)
            if play.report is None:
                self._view.line("expect", "FAILED" if failures else "held")
            for failure in failures:
                self._view.line("", f"FAILED {failure}")
            result.failures += failures
            result.played += 1
            result.checked += play.checks
        return result

    def follow(self, since: datetime | None = None) -> None:
        """Until stopped: the clock runs on, the collectors report on, reports sent by others
        and changes of the CRs are printed (see the module docstring). `since`: the fleet's
        time, which the clock first catches up with (the epilogue moved the hub on alone)."""
        self.system.heard()  # the play's own reports: printed already
        self._view.line("follow", "the play is over; reports sent now are judged and shown")
        if since is not None and since > self._clock():
            self._report_on(since)
            self._clock.move_to(since)
        pace = self._scale or 1.0
        last = time.monotonic()
        while not self._stop.wait(0.05):
            now = time.monotonic()
            target = self._clock() + timedelta(seconds=(now - last) * pace)
            last = now
            self._report_on(target)
            self._clock.move_to(target)
            self._settle()
            self._look()
            self._view.status("hub", self.system.hub_status())

    def _report_on(self, until: datetime) -> None:
        """Each collector's last word again, at its time, as due by `until`."""
        while True:
            self._settle()
            self._by_hand()  # a word sent by hand meanwhile is the last one
            due = self._words.due(self.system.worker.state)
            if not due or due[0][0] > until:
                return
            moment, report = due[0]
            self._clock.move_to(max(moment, self._clock()))
            self._settle()  # the timers due by then fire first
            try:
                answer = self.system.report(**report)
            except (ReportRejected, ReportUnavailable) as error:
                self._view.line("report", f"{_report_text(report)} => not delivered: {error}")
                return  # the agent is not there: it is tried again at the next move
            self.again.reports += 1
            self.again.refused += answer["verdict"] == "refused"
            said = f"{_report_text(report)} => {_answer_text(answer, self._origin)}"
            self._view.line("report", f"{said}   # again, every {self._words.every(report)}")
            self._by_hand(own=report)

    def _by_hand(self, own: Mapping[str, Any] | None = None) -> None:
        """Print the reports the controller judged that this player did not send (someone ran
        `addon-status report` meanwhile), with their verdicts; `own`: the one it just sent."""
        profile = self._scenario.config.profile
        for report, verdict in self.system.heard():
            sent = as_sent(report, profile.name_of(report.reason))
            if own is not None and same(sent, own):
                own = None  # the player's own, printed already
                continue
            self._words.heard(sent)
            api = verdict.to_api(profile)
            self.by_hand.reports += 1
            self.by_hand.refused += api["verdict"] == "refused"
            answer = _answer_text(api, self._origin)
            self._view.line("report", f"{_report_text(sent)} => {answer}   # sent by hand")

    def _advance_to(self, play: Play, result: Result) -> bool:
        """Fire the timers due by the step's time, each at its own; False when stopped."""
        target = self._start + play.at
        while True:
            self._settle()
            wakeup = next_wakeup(self.system.worker.state, self._scenario.config)
            moment = target if wakeup is None or wakeup >= target else max(wakeup, self._clock())
            if not self._wait_until(moment):
                return False
            self._clock.move_to(moment)
            self._settle()
            before = self._spoke
            status = self._look()
            if status != before:  # a timer fired: the hub copy follows it too
                when = format_duration(moment - self._start)
                result.failures += self._hub_follows(status, f"{play.where}, timers due at {when}")
            if moment == target:
                return True

    def _change_generation(self, generation: int) -> None:
        """The CR's spec changed: go on once the worker has seen it through its watch."""
        self.system.change_generation(generation)
        self._view.line("spec", f"the CR's spec changed: metadata.generation {generation}")
        deadline = time.monotonic() + self._patience
        while self.system.worker.state.generation < generation:
            if time.monotonic() >= deadline:
                raise PlayError(f"the worker did not see generation {generation} in time")
            time.sleep(0.005)
        self._settle()
        self._look()

    def _change_object(self, change: ObjectChange) -> None:
        """Write the object; go on once the worker has handled its watch event."""
        version = self.system.change_object(change)
        what = "deleted" if change.value is None else "written"
        self._view.line("object", f"{change.kind} {change.name} {what} ({change.resource})")
        if version is None:
            return
        deadline = time.monotonic() + self._patience
        while int(self.system.worker.objects_seen.get(change.resource) or 0) < int(version):
            if time.monotonic() >= deadline:
                raise PlayError(f"the worker did not see {change.kind} {change.name} in time")
            time.sleep(0.005)
        self._settle()
        self._look()

    def _look(self) -> Mapping[str, Any]:
        """The spoke CR's status as stored, printed if it changed."""
        self._spoke = self.system.spoke_status()
        self._view.status("spoke", self._spoke)
        return self._spoke

    @property
    def _offset(self) -> timedelta:
        return self._start - EPOCH

    def _wait_until(self, moment: datetime, *, since: datetime | None = None) -> bool:
        """Wait the scaled distance from `since` (the clock by default) to `moment`, printing
        the reports sent by hand meanwhile as they come; False when stopped."""
        if self._scale is None:
            return not self._stop.is_set()
        seconds = (moment - (since or self._clock())).total_seconds() / self._scale
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self._stop.wait(min(left, _HEARD_EVERY)):
                return False
            self._by_hand()
        return not self._stop.is_set()

    def _settle(self) -> None:
        """Wait until the worker has handled everything queued, due timers included."""
        try:
            self.system.worker.tick().result(timeout=self._patience)
        except FutureTimeout as error:
            raise PlayError(f"the worker did not settle within {self._patience:g}s") from error

    def _send(self, play: Play, result: Result) -> dict[str, Any] | None:
        if play.report is None:
            return None
        text = _report_text(play.report)
        try:
            answer = self.system.report(**play.report)
        except (ReportRejected, ReportUnavailable) as error:
            self._view.line("report", f"{text} => not delivered: {error}")
            result.failures.append(f"{play.where}: the report was not delivered: {error}")
            return None
        result.reports += 1
        result.refused += answer["verdict"] == "refused"
        self._words.heard(play.report)
        note = f"   # {play.note}" if play.note else ""
        self._view.line("report", f"{text} => {_answer_text(answer, self._origin)}{note}")
        self._by_hand(own=play.report)
        return answer

    def _hub_follows(self, spoke: Mapping[str, Any], where: str) -> list[str]:
        """[] once the hub copy equals the spoke's status as replication copies it."""
        mode = self.system.hub_copy
        wanted = projection(spoke, mode)
        deadline = time.monotonic() + self._patience
        while True:
            hub = self.system.hub_status()
            if projection(hub, mode) == wanted:
                self._view.status("hub", hub)
                return []
            if time.monotonic() >= deadline:
                return [
                    f"{where}: the hub copy did not follow within {self._patience:g}s: "
                    f"{_difference(wanted, projection(hub, mode))}"
                ]
            if self._stop.wait(0.005):
                return []  # interrupted: the summary says what was not checked


def _report_text(report: Mapping[str, Any]) -> str:
    who = report["collector"] or "operator -> all"
    text = f"{who}: {report['reason']}"
    if report["message"]:
        text += f" {report['message']!r}"
    if report["observed_generation"] is not None:
        text += f" gen {report['observed_generation']}"
    if report.get("version") is not None:
        text += f" version {report['version']}"
    return text


def _answer_text(answer: Mapping[str, Any], start: datetime) -> str:
    verdict = str(answer["verdict"])
    if verdict == "refused":
        return f"REFUSED by {answer.get('rule')}: {answer.get('detail')}"
    if verdict == "pending" and answer.get("deadline"):
        deadline = stamp(parse_time(answer["deadline"]) - start).strip()
        return f"pending: the dampening window ends at {deadline}"
    return verdict


def _difference(spoke: Mapping[str, Any], hub: Mapping[str, Any]) -> str:
    """The first thing the hub copy has wrong: `expected ... (spoke), found ... (hub)`."""
    found = {c.get("type"): c for c in hub.get("conditions") or []}
    for condition in spoke.get("conditions") or []:
        if found.get(condition.get("type")) != condition:
            copy = found.get(condition.get("type"))
            return f"condition {condition.get('type')}: expected {condition}, found {copy}"
    for key in sorted({*spoke, *hub}):
        if spoke.get(key) != hub.get(key):
            return f"{key}: expected {spoke.get(key)!r}, found {hub.get(key)!r}"
    return f"expected {addon_summary(spoke)}, found {addon_summary(hub)}"
