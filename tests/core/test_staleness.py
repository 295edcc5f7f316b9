"""docs/spec.md §4, staleness: the clock that starts with the controller and
restarts with every well-formed report whatever its verdict, `staleAfter` and its default of
three report intervals, the stale collector's `Unknown` / `ReportsStale` condition over a kept
state and reason, its `ReportsStale` contribution to the aggregation, the next report that clears
it and is judged against the state underneath, and `Disabled` / `NotSupported` that never go
stale.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

import pytest

from statemachines.reports import VerdictKind
from statemachines.stored import to_status
from statemachines.vocabulary import Reason, State
from tests.core.conftest import MC, MIN, SEC, T0, UWL, Run, Target, expect, reach
from tests.names import DM, FF, FS, NS, UF, US, R, S, T, V


def at(minutes: float) -> datetime:
    return T0 + timedelta(minutes=minutes)


STALE: dict[str, Any] = {"stale": True, "status": "Unknown", "condition_reason": "ReportsStale"}
FRESH: dict[str, Any] = {"stale": False, "status": "True"}


@pytest.mark.parametrize(
    ("settings", "limit"),
    [
        pytest.param({}, 15 * MIN, id="default-is-three-default-intervals"),
        pytest.param({"reportInterval": "1m"}, 3 * MIN, id="default-is-three-report-intervals"),
        pytest.param({"reportInterval": "1m", "staleAfter": "2m"}, 2 * MIN, id="stale-after-wins"),
    ],
)
def test_staleness_clock_starts_when_the_controller_starts(
    settings: dict[str, Any], limit: timedelta
) -> None:
    """Nothing reported since the start for `staleAfter`: every collector's condition is
    Unknown / ReportsStale from that moment on, and the addon is no longer Progressing."""
    run = Run.begin(settings=settings)
    run.advance(limit - SEC)
    for name in (MC, UWL):
        expect(run, collector=name, **FRESH)
    assert run.last.conditions is None
    run.advance(limit)
    for name in (MC, UWL):
        expect(
            run, collector=name, state=S.PROGRESSING, reason=None, changed_at=T0 + limit, **STALE
        )
    expect(run, addon=T.DEGRADED, addon_reason=R.REPORTS_STALE, written=True)


@pytest.mark.parametrize(
    ("config", "steps", "verdict"),
    [
        pytest.param({}, [(0, None), (10, FS)], V.ACCEPTED, id="accepted-report-restarts-it"),
        pytest.param({}, [(0, FS), (10, FS)], V.HEARTBEAT, id="heartbeat-restarts-it"),
        pytest.param({"degradeAfter": "30m"}, [(0, FS), (10, FF)], V.PENDING,
                     id="pending-report-restarts-it"),
        pytest.param({}, [(0, UF), (10, FS)], V.REFUSED, id="refused-report-restarts-it"),
        pytest.param({}, [(0, FS), (10, "restart")], None, id="controller-start-restarts-it"),
    ],
)  # fmt: skip
def test_every_well_formed_report_restarts_the_staleness_clock(
    config: dict[str, Any], steps: list[tuple[float, Any]], verdict: VerdictKind | None
) -> None:
    run = Run.begin(collectors=[MC], settings=config)
    for minute, action in steps:
        run.at(at(minute))
        if action == "restart":
            run.restart()
        elif action is not None:
            run.report(action, MC, "alive")
    if verdict is not None:
        expect(run, verdict=verdict)
    run.advance(at(15))
    expect(run, **FRESH)
    run.advance(at(25) - SEC)
    expect(run, **FRESH)
    run.advance(at(25))
    expect(run, changed_at=at(25), **STALE)


@pytest.mark.parametrize(
    ("reason", "state"),
    [
        pytest.param(None, S.PROGRESSING, id="never-reported"),
        pytest.param(US, S.PROGRESSING, id="progressing"),
        pytest.param(FS, S.AVAILABLE, id="available"),
        pytest.param(FF, S.DEGRADED, id="degraded-by-forward-failure"),
        pytest.param(UF, S.DEGRADED, id="degraded-by-update-failure"),
    ],
)
def test_stale_collector_keeps_its_state_and_reason_underneath(
    reason: Reason | None, state: State
) -> None:
    """The condition says Unknown / ReportsStale; the machine underneath (and the stored status
    entry) keeps the state and reason, and the condition's message names them."""
    run = reach({MC: Target(reason, stale=True)})
    expect(run, state=state, reason=reason, changed_at=T0 + MIN, **STALE)
    message = run.collector_condition().message
    assert state.value in message and (reason or R.NO_REPORT_YET).value in message
    stored = json.loads(json.dumps(to_status(run.state)))["collectors"][0]
    assert (stored["state"], stored.get("reason"), stored["stale"]) == (
        state.value,
        reason.value if reason else None,
        True,
    )


@pytest.mark.parametrize(
    ("mc", "uwl", "kept"),
    [
        pytest.param(Target(FS, stale=True), None, R.REPORTS_STALE, id="alone"),
        pytest.param(Target(FS, stale=True), Target(FS), R.REPORTS_STALE, id="beside-available"),
        pytest.param(Target(FF, stale=True), Target(FS), R.REPORTS_STALE,
                     id="whatever-underneath"),
        pytest.param(Target(FS), Target(FS, stale=True), R.REPORTS_STALE, id="uwl-stale"),
        pytest.param(Target(FS, stale=True), Target(UF), R.REPORTS_STALE,
                     id="above-update-failure"),
        pytest.param(Target(FS, stale=True), Target(FF), R.FORWARD_FAILURE,
                     id="below-forward-failure"),
    ],
)  # fmt: skip
def test_stale_collector_contributes_reports_stale(
    mc: Target, uwl: Target | None, kept: Reason
) -> None:
    """A stale collector counts as `ReportsStale` (-> Degraded) whatever its state underneath,
    ranked between ForwardFailure and UpdateFailure; a stale one never leaves it Available."""
    targets = {MC: mc} if uwl is None else {MC: mc, UWL: uwl}
    run = reach(targets)
    expect(run, addon=T.DEGRADED, addon_reason=kept)


@pytest.mark.parametrize(
    ("underneath", "reason", "checks"),
    [
        pytest.param(FS, FF, {"verdict": V.PENDING, "state": S.AVAILABLE, "reason": FS,
                              "condition_reason": "ForwardSuccessful"},
                     id="failure-is-dampened-as-if-available"),
        pytest.param(FS, FS, {"verdict": V.HEARTBEAT, "state": S.AVAILABLE,
                              "condition_reason": "ForwardSuccessful", "message": "back",
                              "addon": T.AVAILABLE},
                     id="same-reason-is-a-heartbeat"),
        pytest.param(FS, US, {"verdict": V.ACCEPTED, "state": S.PROGRESSING,
                              "changed_at": at(20)},
                     id="operator-report-moves-it"),
        pytest.param(UF, FS, {"verdict": V.REFUSED, "rule": "RequiresForwardFailure",
                              "state": S.DEGRADED, "reason": UF,
                              "condition_reason": "UpdateFailure"},
                     id="refused-as-underneath-but-alive"),
        pytest.param(FF, FS, {"verdict": V.ACCEPTED, "state": S.AVAILABLE,
                              "addon": T.AVAILABLE},
                     id="recovery-as-underneath"),
        pytest.param(None, US, {"verdict": V.ACCEPTED, "state": S.PROGRESSING,
                                "condition_reason": "UpdateSuccessful"},
                     id="first-report-after-silence-is-accepted"),
    ],
)  # fmt: skip
def test_next_report_clears_staleness_and_is_judged_against_the_state_underneath(
    underneath: Reason | None, reason: Reason, checks: dict[str, Any]
) -> None:
    run = reach({MC: Target(underneath, stale=True)})
    run.at(at(20)).report(reason, MC, "back")
    expect(run, stale=False, status="True", **checks)


@pytest.mark.parametrize(
    "reason",
    [pytest.param(DM, id="disabled"), pytest.param(NS, id="not-supported")],
)
def test_disabled_and_not_supported_are_never_stale(reason: Reason) -> None:
    """Silence from a switched-off collector is expected: no timer, no Unknown, ever."""
    run = Run.begin()
    run.report(reason, UWL, "off")
    run.report(FS, MC, "sent")
    for minute in range(10, 121, 10):
        run.at(at(minute)).report(FS, MC, "sent")
        expect(run, collector=UWL, stale=False, status="True", condition_reason=reason.value)
        expect(run, collector=MC, stale=False, addon=T.AVAILABLE)
    run.report(US, MC, "redeployed")
    run.report(reason, MC, "off")
    expect(run, verdict=V.ACCEPTED)
    run.advance(at(24 * 60))
    for name in (MC, UWL):
        expect(run, collector=name, stale=False, status="True", condition_reason=reason.value)
    assert run.last.next_wakeup is None


def test_the_report_that_ends_staleness_is_a_recorded_change() -> None:
    """Staleness ending is visible (Unknown -> True), so it is a Change: the shell turns
    Changes into Kubernetes Events and the timeline into rows."""
    from statemachines import Cause, Config, Position, Report, advance, apply, start

    config = Config.create(collectors=["metrics-collector"])
    state = start(config, T0)
    state = apply(state, Report(FS, MC), at(1), config=config).state
    state = advance(state, at(30), config=config).state
    assert state.collector(MC).stale
    outcome = apply(state, Report(FS, MC), at(31), config=config)
    assert outcome.verdict is not None and outcome.verdict.kind is V.HEARTBEAT
    assert [(c.collector, c.cause, c.before, c.after) for c in outcome.changes] == [
        (MC, Cause.REPORT, Position(State.AVAILABLE, FS, stale=True), Position(State.AVAILABLE, FS))
    ]
    assert outcome.changes[0].label == (
        "Available (ForwardSuccessful, stale) -> Available (ForwardSuccessful)"
    )
