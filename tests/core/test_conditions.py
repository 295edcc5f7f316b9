"""docs/spec.md §6, writing conditions: one condition of each type in a stable
order, the `lastTransitionTime` of a standard condition that moves only with its status, no
write when nothing changed (a heartbeat with the same message, a refused report), the reason
pattern, messages cut at 32768 characters and never rejected, RFC 3339 UTC times in whole
seconds, `observedGeneration` on every condition, the `OutdatedGeneration` and
`FutureGeneration` refusals; and the find helper.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from statemachines.conditions import Condition, find_condition
from statemachines.core import start
from statemachines.reports import VerdictKind
from statemachines.stored import to_status
from statemachines.vocabulary import ConditionType, Reason
from tests.core.conftest import MC, MIN, SEC, STANDARD, T0, UWL, Run, Target, expect, reach
from tests.names import DM, FF, FS, NS, UF, US, S, T, V

ORDER = [*STANDARD, "Ready", "MetricsCollectorStatus", "UwlMetricsCollectorStatus"]
REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
RFC3339_WHOLE_SECONDS_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")
GENERATION = "generation"
RESTART = "restart"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


def _play(run: Run, steps: list[tuple[Any, ...]]) -> None:
    """`(minute, action, ...)`: a reason (with collector and message), None (time passes),
    (GENERATION, n) the shell reading `metadata.generation`, or RESTART."""
    for minute, action, *rest in steps:
        run.at(at(minute))
        if action == RESTART:
            run.restart()
        elif isinstance(action, tuple):
            run.observe(action[1])
        elif action is None:
            run.advance()
        else:
            run.report(action, *rest)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([], id="at-start"),
        pytest.param([(1, FS, MC, "a"), (2, FF, UWL, "b"), (3, DM, UWL, "c"), (4, UF, MC, "d")],
                     id="after-transitions"),
        pytest.param([(1, FS, MC, "a"), (20, None), (21, NS, None, "x")], id="after-stale"),
        pytest.param([(1, FS, MC, "a"), (2, RESTART), (3, US, None, "b")], id="after-restart"),
    ],
)  # fmt: skip
def test_one_condition_of_each_type_in_a_stable_order(steps: list[tuple[Any, ...]]) -> None:
    run = Run.begin()
    assert [c.type for c in run.state.conditions] == ORDER
    for step in steps:
        _play(run, [step])
        assert [c.type for c in run.state.conditions] == ORDER, step


# Reached through the steps, each standard condition's lastTransitionTime (minutes after T0).
TWO_FORWARDING = [(1, FS, MC, "sent"), (1, FS, UWL, "sent")]
FLIPPED = {T.AVAILABLE: 1, T.DEGRADED: 0, T.PROGRESSING: 1, T.DISABLED: 0, T.NOT_SUPPORTED: 0}


@pytest.mark.parametrize(
    ("steps", "times"),
    [
        pytest.param([], dict.fromkeys(STANDARD, 0), id="start-sets-every-time"),
        pytest.param(TWO_FORWARDING, FLIPPED, id="status-flip-moves-the-time"),
        pytest.param([(0.5, FS, MC, "sent"), *TWO_FORWARDING[1:]],
                     {**FLIPPED, T.PROGRESSING: 1}, id="reason-change-alone-keeps-the-time"),
        pytest.param([*TWO_FORWARDING, (2, (GENERATION, 2))], FLIPPED,
                     id="generation-change-keeps-the-time"),
        pytest.param([*TWO_FORWARDING, (3, FS, MC, "new words")], FLIPPED,
                     id="message-change-keeps-the-time"),
        pytest.param([*TWO_FORWARDING, (4, FF, UWL, "503"), (14, None)],
                     {**FLIPPED, T.AVAILABLE: 14, T.DEGRADED: 14},
                     id="timer-flip-moves-the-time-to-the-deadline"),
        pytest.param([*TWO_FORWARDING, (5, RESTART), (6, FS, MC, "again")], FLIPPED,
                     id="restart-keeps-the-time"),
    ],
)  # fmt: skip
def test_standard_transition_time_moves_only_when_its_status_changes(
    steps: list[tuple[Any, ...]], times: dict[ConditionType, float]
) -> None:
    """The `meta.SetStatusCondition` rule: reason, message and observedGeneration may change
    without moving `lastTransitionTime`; a status flip moves it on both flipping conditions."""
    run = Run.begin()
    _play(run, steps)
    got = {t: run.condition(t).last_transition_time for t in STANDARD}
    assert got == {t: at(m) for t, m in times.items()}


@pytest.mark.parametrize(
    ("setup", "step", "written"),
    [
        pytest.param([(0, FS, MC, "sent")], (1, FS, MC, "sent"), False,
                     id="heartbeat-with-same-message-writes-nothing"),
        pytest.param([(0, DM, None, "off")], (1, DM, None, "off"), False,
                     id="heartbeat-to-every-collector-writes-nothing"),
        pytest.param([(0, FS, MC, "sent")], (1, FS, MC, "sent, more"), True,
                     id="heartbeat-with-new-message-is-written"),
        pytest.param([(0, UF, MC, "bad")], (1, FS, MC, "sent"), False,
                     id="refused-report-writes-nothing"),
        pytest.param([(0, FS, MC, "sent"), (1, FS, UWL, "sent")], (2, NS, None, "no"), False,
                     id="refused-report-to-every-collector-writes-nothing"),
        pytest.param([(0, FS, MC, "sent")], (1, None), False,
                     id="time-passing-with-nothing-due-writes-nothing"),
        pytest.param([(0, FS, MC, "sent")], (1, (GENERATION, 1)), False,
                     id="same-generation-writes-nothing"),
        pytest.param([(0, FS, MC, "sent")], (1, (GENERATION, 2)), True,
                     id="new-generation-is-written"),
        pytest.param([(0, FS, MC, "sent")], (1, UF, MC, "bad"), True,
                     id="accepted-report-is-written"),
        pytest.param([(0, FS, MC, "sent")], (1, FF, MC, "503"), True,
                     id="opened-window-is-written-beside-the-conditions"),
        pytest.param([(0, FS, MC, "sent"), (1, FF, MC, "503")], (2, FF, MC, "503"), False,
                     id="same-failure-inside-the-window-writes-nothing"),
    ],
)  # fmt: skip
def test_unchanged_status_writes_nothing(
    setup: list[tuple[Any, ...]], step: tuple[Any, ...], written: bool
) -> None:
    run = Run.begin()
    _play(run, setup)
    before = to_status(run.state)
    _play(run, [step])
    expect(run, written=written)
    assert (to_status(run.state) != before) is written


@pytest.mark.parametrize(
    "targets",
    [
        pytest.param({MC: Target(None), UWL: Target(None)}, id="no-report-yet"),
        pytest.param({MC: Target(FS, stale=True), UWL: Target(UF)}, id="stale"),
        pytest.param({MC: Target(FF), UWL: Target(DM)}, id="forward-failure"),
        pytest.param({MC: Target(NS), UWL: Target(US)}, id="not-supported"),
    ],
)
def test_every_reason_matches_the_kubernetes_pattern(targets: dict[str, Target]) -> None:
    run = reach(targets)
    for cond in run.state.conditions:
        assert REASON.match(cond.reason), cond
    with pytest.raises(ValueError, match="reason"):
        Condition("Available", "True", "Not A Reason", "", T0, 1)


@pytest.mark.parametrize(
    ("steps", "settings", "kept"),
    [
        pytest.param([(1, FS, MC, "x" * 40_000)], {}, "x", id="collector-message"),
        pytest.param([(1, FS, MC, "x" * 20_000), (1, FF, UWL, "y" * 20_000)], {}, "x",
                     id="aggregated-message"),
        pytest.param([(1, FS, MC, "ok"), (2, FF, MC, "z" * 50_000), (3, None)],
                     {"degradeAfter": "1m"}, "z", id="message-of-the-window"),
        pytest.param([(1, US, None, "w" * 40_000)], {}, "w", id="report-to-every-collector"),
    ],
)  # fmt: skip
def test_long_message_is_cut_never_rejected(
    steps: list[tuple[Any, ...]], settings: dict[str, Any], kept: str
) -> None:
    """Nothing is refused or raised for a long message (docs/spec.md §6 Size); a report's
    message is cut to 1,024 characters, ending in `…` and still starting with what was said
    (cut, not dropped), and the addon's message quotes it within its own 4,096."""
    run = Run.begin(settings=settings)
    _play(run, steps)
    assert all(o.verdict is None or o.verdict.kind is not V.REFUSED for o in run.outcomes)
    own = run.collector_condition(MC).message
    assert own == kept * 1023 + "…"
    for raw in to_status(run.state)["conditions"]:
        assert len(raw["message"]) <= 4096, raw["type"]
    assert f"({own})" in run.condition(run.addon()).message
    assert run.condition(run.addon()).message.startswith("MetricsCollector: ")


def test_message_of_exactly_the_limit_is_kept_whole() -> None:
    run = Run.begin(collectors=[MC])
    run.report(FS, MC, "m" * 1024)
    assert run.collector_condition().message == "m" * 1024
    run.report(FS, MC, "m" * 1025)
    assert run.collector_condition().message == "m" * 1023 + "…"


PLUS_TWO = timezone(timedelta(hours=2))


@pytest.mark.parametrize(
    ("begin", "settings", "steps"),
    [
        pytest.param(T0 + timedelta(microseconds=500_000), {},
                     [(T0 + 61.75 * SEC, FS)], id="fractions-dropped"),
        pytest.param(T0, {"degradeAfter": "90.5s"},
                     [(T0 + 10.25 * SEC, FS), (T0 + 20.5 * SEC, FF), (T0 + 5 * MIN, None)],
                     id="fractional-deadline-dropped"),
        pytest.param(T0.astimezone(PLUS_TWO), {},
                     [((T0 + 90 * SEC).astimezone(PLUS_TWO), FS)], id="written-in-utc"),
    ],
)  # fmt: skip
def test_transition_time_is_rfc3339_utc_in_whole_seconds(
    begin: datetime, settings: dict[str, Any], steps: list[tuple[datetime, Any]]
) -> None:
    run = Run.begin(collectors=[MC], settings=settings, at=begin)
    for moment, reason in steps:
        run.at(moment)
        if reason is None:
            run.advance()
        else:
            run.report(reason, MC, "m")
    for raw in to_status(run.state)["conditions"]:
        text = raw["lastTransitionTime"]
        assert RFC3339_WHOLE_SECONDS_UTC.match(text), raw
        assert begin - SEC < datetime.fromisoformat(text.replace("Z", "+00:00")) <= run.now
    for cond in run.state.conditions:
        assert cond.last_transition_time.microsecond == 0, cond


@pytest.mark.parametrize(
    ("generation", "steps", "expected", "written"),
    [
        pytest.param(3, [], 3, None, id="start-generation"),
        pytest.param(3, [(1, (GENERATION, 5))], 5, True, id="new-generation-on-every-condition"),
        pytest.param(5, [(1, (GENERATION, 4))], 5, False, id="older-generation-ignored"),
        pytest.param(3, [(1, FS, MC, "sent")], 3, True, id="report-without-generation"),
    ],
)
def test_every_condition_carries_observed_generation(
    generation: int, steps: list[tuple[Any, ...]], expected: int, written: bool | None
) -> None:
    run = Run.begin(generation=generation)
    _play(run, steps)
    assert {c.observed_generation for c in run.state.conditions} == {expected}
    assert {c["observedGeneration"] for c in to_status(run.state)["conditions"]} == {expected}
    if written is not None:
        expect(run, written=written)


@pytest.mark.parametrize(
    ("steps", "verdict", "rule"),
    [
        pytest.param([(1, FS, MC, "sent", 3)], V.REFUSED, "FutureGeneration",
                     id="newer-than-the-cr-is-refused"),
        pytest.param([(1, US, None, "deployed", 3)], V.REFUSED, "FutureGeneration",
                     id="report-to-every-collector-is-refused"),
        pytest.param([(1, FS, MC, "sent", 2**53 + 1), (2, FS, MC, "sent", 2)], V.ACCEPTED, None,
                     id="the-real-generation-is-not-locked-out"),
        pytest.param([(1, (GENERATION, 3)), (2, FS, MC, "sent", 3)], V.ACCEPTED, None,
                     id="judged-once-the-cr-is-that-new"),
        pytest.param([(1, FS, MC, "sent", 2)], V.ACCEPTED, None, id="the-crs-own-is-judged"),
    ],
)  # fmt: skip
def test_future_generation_is_refused(
    steps: list[tuple[Any, ...]], verdict: VerdictKind, rule: str | None
) -> None:
    """A report claiming a generation newer than the CR's `metadata.generation` is refused and
    never raises the generation the conditions carry; only the CR does."""
    run = Run.begin(generation=2)
    for minute, action, *rest in steps:
        run.at(at(minute))
        if isinstance(action, tuple):
            run.observe(action[1])
        else:
            collector, message, generation = rest
            run.report(action, collector, message, generation=generation)
    expect(run, verdict=verdict, rule=rule)
    cr = max([2, *(a[1] for _, a, *_ in steps if isinstance(a, tuple))])
    assert run.state.generation == cr
    assert {c.observed_generation for c in run.state.conditions} == {cr}
    if verdict is V.REFUSED:
        expect(run, written=False, state=S.PROGRESSING, reason=None)


def test_a_stored_future_generation_is_not_believed_on_restart() -> None:
    """A status written before FutureGeneration existed may carry a generation from the future;
    starting from it, the core works at the CR's and rewrites the conditions with it."""
    run = Run.begin(generation=2)
    run.report(FS, MC, "sent")
    stored = to_status(run.state)
    for condition in stored["conditions"]:
        condition["observedGeneration"] = 2**53 + 1
    state = start(run.config, run.now, status=stored, generation=2)
    assert state.generation == 2
    assert {c.observed_generation for c in state.conditions} == {2}


@pytest.mark.parametrize(
    ("first", "second", "verdict", "rule"),
    [
        pytest.param((MC, FS, 3), (MC, FF, 2), V.REFUSED, "OutdatedGeneration",
                     id="older-than-accepted-is-refused"),
        pytest.param((MC, FS, 3), (MC, US, 2), V.REFUSED, "OutdatedGeneration",
                     id="older-operator-report-is-refused"),
        pytest.param((MC, FS, 3), (MC, US, 3), V.ACCEPTED, None, id="same-generation-is-judged"),
        pytest.param((MC, FS, 3), (MC, US, 4), V.ACCEPTED, None, id="newer-generation-is-judged"),
        pytest.param((MC, FS, 3), (MC, US, None), V.ACCEPTED, None,
                     id="report-without-generation-is-judged"),
        pytest.param((MC, FS, 3), (UWL, FS, 2), V.ACCEPTED, None,
                     id="generation-is-per-collector"),
        pytest.param((MC, FS, 3), (None, US, 2), V.REFUSED, "OutdatedGeneration",
                     id="report-to-every-collector-refused-by-one"),
        pytest.param((MC, UF, None), (MC, FS, 5), V.REFUSED, "RequiresForwardFailure",
                     id="refused-report-sets-no-generation"),
    ],
)  # fmt: skip
def test_outdated_generation_is_refused(
    first: tuple[str, Reason, int | None],
    second: tuple[str | None, Reason, int | None],
    verdict: VerdictKind,
    rule: str | None,
) -> None:
    run = Run.begin(generation=5)
    run.report(first[1], first[0], "first", generation=first[2])
    collectors = run.state.collectors
    run.at(MIN).report(second[1], second[0], "second", generation=second[2])
    expect(run, verdict=verdict, rule=rule)
    if verdict is V.REFUSED:
        assert run.state.collectors == collectors
        expect(run, written=False)
    if second[2] == 5:  # the refused generation 5 was never accepted: 4 is not outdated
        run.at(2 * MIN).report(US, MC, "third", generation=4)
        expect(run, verdict=V.ACCEPTED)


def _c(
    type_: str, status: str, minute: int, reason: str = "Because", message: str = ""
) -> Condition:
    return Condition(type_, status, reason, message, at(minute), 1)


@pytest.mark.parametrize(
    ("conditions", "type_", "found"),
    [
        pytest.param((), "Available", None, id="find-in-empty"),
        pytest.param((_c("Degraded", "False", 1), _c("Available", "True", 2)), "Available",
                     _c("Available", "True", 2), id="find-beside-others"),
        pytest.param((_c("Degraded", "False", 1),), "Available", None, id="find-absent"),
    ],
)  # fmt: skip
def test_find_condition(
    conditions: tuple[Condition, ...], type_: str, found: Condition | None
) -> None:
    assert find_condition(conditions, type_) == found
