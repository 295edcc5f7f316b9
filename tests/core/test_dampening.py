"""docs/spec.md §3, flap dampening: the window a `ForwardFailure` must hold
before `Available -> Degraded` (pending verdict with the deadline, later failures keep it), what
cancels it (a success, an operator transition; not a refused report), the timer that completes it
at the deadline without any report (transition time = deadline, message of the last failure),
its persistence outside the conditions across a restart, the exact deadline a verdict names,
`degradeAfter: 0`, and the mirrored `recoverAfter` window. Time moves only by the test.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from statemachines.conditions import parse_time
from statemachines.stored import to_status
from statemachines.vocabulary import SEED
from tests.core.conftest import MC, T0, Run, expect
from tests.names import DM, FF, FS, NS, UF, US, S, T, V

RESTART = "restart"


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


Step = tuple[float, Any, str, dict[str, Any]]


def _timeline(steps: list[Step], **config: Any) -> Run:
    """Play `(minute, action, message, checks)`: action is a reason about the metrics collector,
    None (time passes), or RESTART (status through JSON into a new `start`). `checks` go to the
    shared `expect`; `wakeup` is checked against the outcome's next wake-up."""
    run = Run.begin(collectors=[MC], **config)
    for minute, action, message, checks in steps:
        run.at(at(minute))
        if action == RESTART:
            run.restart()
            outcome = None
        elif action is None:
            outcome = run.advance()
        else:
            outcome = run.report(action, MC, message)
        wanted = dict(checks)
        if "wakeup" in wanted:
            assert outcome is not None
            assert outcome.next_wakeup == wanted.pop("wakeup"), outcome
        expect(run, outcome, **wanted)
    return run


AVAILABLE_AT_0: Step = (0, FS, "metrics sent", {"state": S.AVAILABLE})
PENDING: dict[str, Any] = {
    "verdict": V.PENDING,
    "state": S.AVAILABLE,
    "reason": FS,
    "addon": T.AVAILABLE,
}


@pytest.mark.parametrize(
    ("config", "steps"),
    [
        pytest.param({}, [AVAILABLE_AT_0,
                          (1, FF, "503", {**PENDING, "deadline": at(11), "wakeup": at(11),
                                          "message": "metrics sent", "changed_at": T0})],
                     id="first-failure-is-pending-with-deadline"),
        pytest.param({"settings": {"degradeAfter": "3m"}},
                     [AVAILABLE_AT_0, (1, FF, "503", {**PENDING, "deadline": at(4)})],
                     id="window-is-degrade-after-long"),
        pytest.param({"collector_settings": {MC: {"degradeAfter": "2m"}}},
                     [AVAILABLE_AT_0, (1, FF, "503", {**PENDING, "deadline": at(3)})],
                     id="collector-has-its-own-degrade-after"),
    ],
)  # fmt: skip
def test_first_failure_while_available_starts_the_window(
    config: dict[str, Any], steps: list[Step]
) -> None:
    _timeline(steps, **config)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([AVAILABLE_AT_0,
                      (1, FF, "503 a", {**PENDING, "deadline": at(11)}),
                      (4, FF, "503 b", {**PENDING, "deadline": at(11)}),
                      (10 + 59 / 60, FF, "503 c", {**PENDING, "deadline": at(11)})],
                     id="further-failures-keep-the-deadline"),
    ],
)  # fmt: skip
def test_further_failures_keep_the_original_deadline(steps: list[Step]) -> None:
    _timeline(steps)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([AVAILABLE_AT_0,
                      (1, FF, "503", PENDING),
                      (5, FS, "sent again", {"verdict": V.HEARTBEAT, "state": S.AVAILABLE,
                                             "message": "sent again", "changed_at": T0}),
                      (12, None, "", {"state": S.AVAILABLE, "reason": FS, "addon": T.AVAILABLE,
                                      "changed_at": T0})],
                     id="success-absorbs-the-flap"),
        pytest.param([AVAILABLE_AT_0,
                      (1, FF, "503", {**PENDING, "deadline": at(11)}),
                      (5, FS, "sent", {"verdict": V.HEARTBEAT}),
                      (6, FF, "503 again", {**PENDING, "deadline": at(16)}),
                      (12, None, "", {"state": S.AVAILABLE}),
                      (16, None, "", {"state": S.DEGRADED, "changed_at": at(16)})],
                     id="next-failure-opens-a-new-window"),
    ],
)  # fmt: skip
def test_forward_successful_inside_the_window_cancels_it(steps: list[Step]) -> None:
    _timeline(steps)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (3, US, "updated", {"verdict": V.ACCEPTED, "state": S.PROGRESSING}),
                      (12, None, "", {"state": S.PROGRESSING, "reason": US,
                                      "changed_at": at(3)})],
                     id="update-successful-cancels-the-window"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (3, UF, "bad image", {"verdict": V.ACCEPTED, "state": S.DEGRADED}),
                      (12, None, "", {"state": S.DEGRADED, "reason": UF, "message": "bad image",
                                      "changed_at": at(3)})],
                     id="update-failure-cancels-the-window"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (3, DM, "off", {"verdict": V.ACCEPTED, "state": S.DISABLED}),
                      (12, None, "", {"state": S.DISABLED, "reason": DM, "changed_at": at(3)})],
                     id="disabled-metrics-cancels-the-window"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (3, NS, "", {"verdict": V.REFUSED, "state": S.AVAILABLE}),
                      (11, None, "", {"state": S.DEGRADED, "reason": FF, "changed_at": at(11)})],
                     id="refused-operator-report-keeps-the-window"),
    ],
)  # fmt: skip
def test_operator_transition_out_of_available_cancels_the_window(steps: list[Step]) -> None:
    _timeline(steps)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([AVAILABLE_AT_0, (1, FF, "503 first", PENDING),
                      (4, FF, "503 last", PENDING),
                      (10 + 59 / 60, None, "", {"state": S.AVAILABLE, "written": False}),
                      (11, None, "", {"state": S.DEGRADED, "reason": FF, "status": "True",
                                      "condition_reason": "ForwardFailure",
                                      "message": "503 last", "changed_at": at(11),
                                      "addon": T.DEGRADED, "addon_reason": FF,
                                      "written": True})],
                     id="timer-fires-at-the-deadline"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (15, None, "", {"state": S.DEGRADED, "message": "503",
                                      "changed_at": at(11), "addon": T.DEGRADED})],
                     id="late-timer-dates-the-transition-at-the-deadline"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (12, FS, "sent", {"verdict": V.ACCEPTED, "state": S.AVAILABLE,
                                        "changed_at": at(12)})],
                     id="report-after-the-deadline-is-judged-after-the-timer"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (11, FS, "sent", {"verdict": V.ACCEPTED, "state": S.AVAILABLE,
                                        "changed_at": at(11)})],
                     id="success-at-the-deadline-comes-after-the-timer"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (12, FF, "503 still", {"verdict": V.HEARTBEAT, "state": S.DEGRADED,
                                             "changed_at": at(11), "message": "503 still"})],
                     id="failure-after-the-deadline-is-a-heartbeat"),
    ],
)  # fmt: skip
def test_uncancelled_window_degrades_at_the_deadline(steps: list[Step]) -> None:
    """No report is needed at the deadline: `advance` (the shell's timer) fires it, dated at the
    deadline, with the last failure's message; the standard `Degraded` flips at the deadline."""
    run = _timeline(steps)
    if run.collector().state is S.DEGRADED and run.collector().reason is FF:
        assert run.condition(T.DEGRADED).last_transition_time == at(11)
        causes = [(c.at, c.cause) for o in run.outcomes for c in o.changes]
        assert (at(11), "dampening window") in causes


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (5, RESTART, "", {"state": S.AVAILABLE}),
                      (10, None, "", {"state": S.AVAILABLE}),
                      (11, None, "", {"state": S.DEGRADED, "message": "503",
                                      "changed_at": at(11)})],
                     id="window-survives-a-restart"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (5, RESTART, "", {}),
                      (8, FF, "503 again", {**PENDING, "deadline": at(11)})],
                     id="failure-after-a-restart-keeps-the-deadline"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (15, RESTART, "", {"state": S.DEGRADED, "reason": FF, "message": "503",
                                         "changed_at": at(11), "addon": T.DEGRADED})],
                     id="window-that-ended-while-down-fires-on-start"),
        pytest.param([AVAILABLE_AT_0, (1, FF, "503", PENDING),
                      (5, RESTART, "", {}),
                      (6, FS, "sent", {"verdict": V.HEARTBEAT}),
                      (14, None, "", {"state": S.AVAILABLE, "changed_at": T0})],
                     id="success-after-a-restart-cancels-the-window"),
    ],
)  # fmt: skip
def test_window_survives_a_restart(steps: list[Step]) -> None:
    _timeline(steps)


def test_window_is_persisted_outside_the_conditions() -> None:
    """The window's start is in the collector's status entry, and the conditions are untouched
    by the first failure (nothing in them says a window is open)."""
    run = _timeline([AVAILABLE_AT_0])
    conditions = run.state.conditions
    run.at(at(1)).report(FF, MC, "503")
    assert run.state.conditions == conditions
    stored = json.loads(json.dumps(to_status(run.state)))
    (entry,) = stored["collectors"]
    assert entry["pendingReason"] == "ForwardFailure"
    assert entry["pendingSince"] == "2025-01-01T12:01:00Z"
    assert "pending" not in json.dumps(stored["conditions"]).lower()


@pytest.mark.parametrize(
    ("config", "steps"),
    [
        pytest.param({"settings": {"degradeAfter": "0s"}},
                     [AVAILABLE_AT_0, (1, FF, "503", {"verdict": V.ACCEPTED, "deadline": None,
                                                      "state": S.DEGRADED, "reason": FF,
                                                      "changed_at": at(1), "addon": T.DEGRADED})],
                     id="degrade-after-zero-is-immediate"),
        pytest.param({"settings": {"degradeAfter": "10m", "recoverAfter": "10m"}},
                     [AVAILABLE_AT_0,
                      (1, UF, "bad", {"verdict": V.ACCEPTED, "state": S.DEGRADED}),
                      (2, US, "ok", {"verdict": V.ACCEPTED, "state": S.PROGRESSING}),
                      (3, DM, "off", {"verdict": V.ACCEPTED, "state": S.DISABLED})],
                     id="operator-reasons-are-never-dampened"),
        pytest.param({"settings": {"degradeAfter": "10m", "recoverAfter": "10m"}},
                     [(0, FF, "503", {"verdict": V.ACCEPTED, "state": S.DEGRADED}),
                      (1, US, "ok", {"verdict": V.ACCEPTED, "state": S.PROGRESSING}),
                      (2, FS, "sent", {"verdict": V.ACCEPTED, "state": S.AVAILABLE})],
                     id="forwarding-from-progressing-is-not-dampened"),
    ],
)  # fmt: skip
def test_zero_window_and_operator_reasons_are_immediate(
    config: dict[str, Any], steps: list[Step]
) -> None:
    _timeline(steps, **config)


DEGRADED_AT_0: Step = (0, FF, "503", {"state": S.DEGRADED, "reason": FF})
RECOVERING: dict[str, Any] = {
    "verdict": V.PENDING,
    "state": S.DEGRADED,
    "reason": FF,
    "addon": T.DEGRADED,
}


@pytest.mark.parametrize(
    ("config", "steps"),
    [
        pytest.param({}, [DEGRADED_AT_0,
                          (1, FS, "sent", {"verdict": V.ACCEPTED, "state": S.AVAILABLE,
                                           "changed_at": at(1)})],
                     id="recovery-is-immediate-by-default"),
        pytest.param({"settings": {"recoverAfter": "5m"}},
                     [DEGRADED_AT_0,
                      (1, FS, "sent a", {**RECOVERING, "deadline": at(6), "wakeup": at(6)}),
                      (3, FS, "sent b", {**RECOVERING, "deadline": at(6)}),
                      (6, None, "", {"state": S.AVAILABLE, "reason": FS, "message": "sent b",
                                     "changed_at": at(6), "addon": T.AVAILABLE})],
                     id="recovery-completes-at-the-deadline"),
        pytest.param({"settings": {"recoverAfter": "5m"}},
                     [DEGRADED_AT_0, (1, FS, "sent", RECOVERING),
                      (3, FF, "503 again", {"verdict": V.HEARTBEAT, "state": S.DEGRADED}),
                      (10, None, "", {"state": S.DEGRADED, "reason": FF, "changed_at": T0})],
                     id="failure-cancels-the-recovery"),
        pytest.param({"settings": {"recoverAfter": "5m"}},
                     [DEGRADED_AT_0, (1, FS, "sent", RECOVERING),
                      (2, UF, "bad", {"verdict": V.ACCEPTED, "state": S.DEGRADED}),
                      (10, None, "", {"state": S.DEGRADED, "reason": UF, "changed_at": at(2)})],
                     id="operator-transition-cancels-the-recovery"),
        pytest.param({"settings": {"recoverAfter": "5m"}},
                     [DEGRADED_AT_0, (1, FS, "sent", RECOVERING),
                      (3, RESTART, "", {"state": S.DEGRADED}),
                      (6, None, "", {"state": S.AVAILABLE, "changed_at": at(6)})],
                     id="recovery-window-survives-a-restart"),
    ],
)  # fmt: skip
def test_recover_after_mirrors_the_dampening_window(
    config: dict[str, Any], steps: list[Step]
) -> None:
    _timeline(steps, **config)


def test_pending_deadline_is_the_instant_the_cr_stores() -> None:
    """The deadline a `pending` answer names is the window's start as stored on the CR
    (`pendingSince`, microseconds kept) plus the window: not cut to whole seconds, which would
    read up to a second early."""
    run = Run.begin(collectors=[MC])
    run.report(FS, MC, "sent")
    run.at(T0 + timedelta(minutes=1, microseconds=400_000)).report(FF, MC, "503")
    verdict = run.last.verdict
    assert verdict is not None and verdict.kind is V.PENDING
    since = parse_time(to_status(run.state)["collectors"][0]["pendingSince"])
    assert verdict.deadline == since + timedelta(minutes=10)
    assert verdict.to_api(SEED)["deadline"] == "2025-01-01T12:11:00.400000Z"
    assert parse_time(verdict.to_api(SEED)["deadline"]) == since + timedelta(minutes=10)
