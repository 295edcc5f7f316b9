"""docs/spec.md §2, the state machines: every allowed transition of the endpoint
operator's and the metrics collector's definitions (the unlocking ones and
`Degraded(ForwardFailure) -> Degraded(UpdateFailure)` included), the heartbeat rule, the first
report that is never a heartbeat, the refused examples (with a verdict naming the current state,
reason and rule), and the whole (state, reason) grid: whatever the two definitions do not allow
is refused and changes nothing, names a rule of the vocabulary, and logs no warning.
"""

from __future__ import annotations

import logging
from datetime import timedelta
from typing import Any

import pytest

from statemachines.reports import VerdictKind
from statemachines.vocabulary import SEED, ConditionType, Reason, Rule, State
from tests.core.conftest import MC, MIN, T0, UWL, Run, expect
from tests.names import R, S, V

# How a single collector reaches each source state: reports at T0 (none for the fresh one).
SOURCES: dict[str, tuple[State, Reason | None, list[Reason]]] = {
    "progressing": (S.PROGRESSING, None, []),
    "progressing-updated": (S.PROGRESSING, R.UPDATE_SUCCESSFUL, [R.UPDATE_SUCCESSFUL]),
    "available": (S.AVAILABLE, R.FORWARD_SUCCESSFUL, [R.FORWARD_SUCCESSFUL]),
    "degraded-forward": (S.DEGRADED, R.FORWARD_FAILURE, [R.FORWARD_FAILURE]),
    "degraded-update": (S.DEGRADED, R.UPDATE_FAILURE, [R.UPDATE_FAILURE]),
    "disabled": (S.DISABLED, R.DISABLED_METRICS, [R.DISABLED_METRICS]),
    "not-supported": (S.NOT_SUPPORTED, R.NOT_SUPPORTED, [R.NOT_SUPPORTED]),
}


def _from(source: str, settings: dict[str, Any] | None = None) -> Run:
    """A run with the metrics collector alone, in `source` at T0, the clock at T0 + 1m."""
    run = Run.begin(collectors=[MC], settings=settings)
    for reason in SOURCES[source][2]:
        run.report(reason, MC, f"reached {source}")
    return run.at(MIN)


# The transitions of docs/spec.md §2, transcribed: (source, reason) -> destination.
OPERATOR = {
    ("progressing", R.UPDATE_SUCCESSFUL): S.PROGRESSING,
    ("progressing", R.UPDATE_FAILURE): S.DEGRADED,
    ("progressing-updated", R.UPDATE_FAILURE): S.DEGRADED,
    ("progressing", R.DISABLED_METRICS): S.DISABLED,
    ("progressing-updated", R.DISABLED_METRICS): S.DISABLED,
    ("progressing", R.NOT_SUPPORTED): S.NOT_SUPPORTED,
    ("progressing-updated", R.NOT_SUPPORTED): S.NOT_SUPPORTED,
    ("available", R.UPDATE_SUCCESSFUL): S.PROGRESSING,
    ("available", R.UPDATE_FAILURE): S.DEGRADED,
    ("available", R.DISABLED_METRICS): S.DISABLED,
    ("degraded-forward", R.UPDATE_SUCCESSFUL): S.PROGRESSING,
    ("degraded-update", R.UPDATE_SUCCESSFUL): S.PROGRESSING,
    ("degraded-forward", R.UPDATE_FAILURE): S.DEGRADED,
    ("degraded-forward", R.DISABLED_METRICS): S.DISABLED,
    ("degraded-update", R.DISABLED_METRICS): S.DISABLED,
    ("not-supported", R.DISABLED_METRICS): S.DISABLED,
    ("not-supported", R.UPDATE_SUCCESSFUL): S.PROGRESSING,
    ("not-supported", R.UPDATE_FAILURE): S.DEGRADED,
    ("disabled", R.UPDATE_SUCCESSFUL): S.PROGRESSING,
    ("disabled", R.UPDATE_FAILURE): S.DEGRADED,
}
COLLECTOR = {
    ("progressing", R.FORWARD_FAILURE): S.DEGRADED,
    ("progressing-updated", R.FORWARD_FAILURE): S.DEGRADED,
    ("progressing", R.FORWARD_SUCCESSFUL): S.AVAILABLE,
    ("progressing-updated", R.FORWARD_SUCCESSFUL): S.AVAILABLE,
    ("degraded-forward", R.FORWARD_SUCCESSFUL): S.AVAILABLE,
    ("available", R.FORWARD_FAILURE): S.DEGRADED,  # after the window: see docs/spec.md §3
}
IDS = {
    R.UPDATE_SUCCESSFUL: "update-successful",
    R.UPDATE_FAILURE: "update-failure",
    R.DISABLED_METRICS: "disabled-metrics",
    R.NOT_SUPPORTED: "not-supported",
    R.FORWARD_FAILURE: "forward-failure",
    R.FORWARD_SUCCESSFUL: "forward-successful",
}


def _rows(table: dict[tuple[str, Reason], State], actor: str) -> list[Any]:
    return [
        pytest.param(source, reason, dest, id=f"{actor}-{source}-{IDS[reason]}")
        for (source, reason), dest in table.items()
    ]


@pytest.mark.parametrize(
    ("source", "reason", "dest"), [*_rows(OPERATOR, "operator"), *_rows(COLLECTOR, "collector")]
)
def test_allowed_transition_is_accepted(source: str, reason: Reason, dest: State) -> None:
    """Each row of both definitions moves the collector at once (degradeAfter 0 for the one
    dampened row), with the report's reason and message and the report's time."""
    run = _from(source, {"degradeAfter": "0s"})
    run.report(reason, MC, "now")
    expect(
        run,
        verdict=V.ACCEPTED,
        rule=None,
        state=dest,
        reason=reason,
        status="True",
        condition_reason=reason.value,
        message="now",
        changed_at=T0 + MIN,
        addon=ConditionType(dest),
        written=True,
    )


def _grid() -> list[Any]:
    rows = []
    for source, (_, current, _) in SOURCES.items():
        for reason, name in IDS.items():
            if reason is current:
                verdict = V.HEARTBEAT
            elif (source, reason) == ("available", R.FORWARD_FAILURE):
                verdict = V.PENDING  # dampened by default
            elif (source, reason) in OPERATOR or (source, reason) in COLLECTOR:
                verdict = V.ACCEPTED
            else:
                verdict = V.REFUSED
            rows.append(pytest.param(source, reason, verdict, id=f"{source}-{name}"))
    return rows


@pytest.mark.parametrize(("source", "reason", "verdict"), _grid())
def test_every_other_state_reason_pair_is_refused(
    source: str, reason: Reason, verdict: VerdictKind
) -> None:
    """The union of the two definitions is the whole machine: the (state, reason) pairs it does
    not list are refused, keep state, reason, message and time, and write nothing."""
    run = _from(source)
    state, current, _ = SOURCES[source]
    before = run.state
    outcome = run.report(reason, MC, "probe")
    expect(run, verdict=verdict)
    if verdict is V.REFUSED:
        assert outcome.verdict is not None
        assert outcome.verdict.rule
        assert (outcome.verdict.state, outcome.verdict.reason) == (state, current)
        assert run.state == before
        expect(run, state=state, reason=current, written=False)


@pytest.mark.parametrize(
    ("path", "reason", "rule", "settings"),
    [
        pytest.param([R.UPDATE_FAILURE], R.FORWARD_SUCCESSFUL, "RequiresForwardFailure", {},
                     id="update-failure-blocks-available"),
        pytest.param([R.UPDATE_FAILURE], R.FORWARD_SUCCESSFUL, "RequiresForwardFailure",
                     {"recoverAfter": "5m"},
                     id="update-failure-blocks-available-even-when-recovery-is-dampened"),
        pytest.param([R.FORWARD_FAILURE, R.UPDATE_FAILURE], R.FORWARD_SUCCESSFUL,
                     "RequiresForwardFailure", {},
                     id="update-failure-during-outage-blocks-available"),
        pytest.param([R.UPDATE_FAILURE], R.FORWARD_FAILURE, "NoTransition", {},
                     id="update-failure-not-replaced-by-forward-failure"),
        pytest.param([R.DISABLED_METRICS], R.FORWARD_FAILURE, "NoTransition", {},
                     id="disabled-refuses-forward-failure"),
        pytest.param([R.DISABLED_METRICS], R.FORWARD_SUCCESSFUL, "NoTransition", {},
                     id="disabled-refuses-forward-successful"),
        pytest.param([R.NOT_SUPPORTED], R.FORWARD_FAILURE, "NoTransition", {},
                     id="not-supported-refuses-forward-failure"),
        pytest.param([R.NOT_SUPPORTED], R.FORWARD_SUCCESSFUL, "NoTransition", {},
                     id="not-supported-refuses-forward-successful"),
        pytest.param([R.FORWARD_SUCCESSFUL], R.NOT_SUPPORTED, "NoTransition", {},
                     id="available-refuses-not-supported"),
    ],
)  # fmt: skip
def test_refused_report_names_state_reason_and_rule(
    path: list[Reason], reason: Reason, rule: str, settings: dict[str, Any]
) -> None:
    """The examples of docs/spec.md §2 that must be refused: the collector keeps its state, reason,
    message and transition time; the verdict names the current state, reason and the rule."""
    run = Run.begin(collectors=[MC], settings=settings)
    for step, earlier in enumerate(path):
        run.at(step * MIN).report(earlier, MC, f"step {step}")
    before = run.collector()
    state, current = before.state, before.reason
    assert current is path[-1]
    run.at(10 * MIN)
    outcome = run.report(reason, MC, "should not stick")
    expect(
        run,
        verdict=V.REFUSED,
        rule=rule,
        state=state,
        reason=current,
        message=f"step {len(path) - 1}",
        changed_at=T0 + (len(path) - 1) * MIN,
        written=False,
    )
    assert outcome.verdict is not None
    answer = outcome.verdict.to_api(SEED)
    assert answer["verdict"] == "refused"
    assert (answer["state"], answer["reason"], answer["rule"]) == (state.value, current, rule)
    assert state.value in answer["detail"] and current.value in answer["detail"]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param(
            [R.FORWARD_SUCCESSFUL, R.FORWARD_SUCCESSFUL, R.UPDATE_SUCCESSFUL, R.FORWARD_SUCCESSFUL],
            id="update-successful-clears-update-failure",
        ),
        pytest.param(
            [R.FORWARD_FAILURE, R.FORWARD_SUCCESSFUL, R.UPDATE_SUCCESSFUL, R.FORWARD_SUCCESSFUL],
            id="forward-reports-do-not-clear-update-failure",
        ),
    ],
)
def test_update_failure_is_cleared_only_by_update_successful(steps: list[Reason]) -> None:
    """After `UpdateFailure` no run of collector reports makes the collector Available; the
    first `UpdateSuccessful` does (via Progressing), and then forwarding counts again."""
    run = Run.begin(collectors=[MC])
    run.report(R.UPDATE_FAILURE, MC, "bad image")
    for minute, reason in enumerate(steps, start=1):
        run.at(minute * MIN).report(reason, MC, f"minute {minute}")
        if reason is R.UPDATE_SUCCESSFUL:
            break
        expect(run, verdict=V.REFUSED, state=S.DEGRADED, reason=R.UPDATE_FAILURE)
    expect(run, verdict=V.ACCEPTED, state=S.PROGRESSING, reason=R.UPDATE_SUCCESSFUL)
    run.at(10 * MIN).report(R.FORWARD_SUCCESSFUL, MC, "sent")
    expect(run, verdict=V.ACCEPTED, state=S.AVAILABLE, addon=ConditionType.AVAILABLE)


@pytest.mark.parametrize(
    "source",
    [pytest.param(name, id=name) for name, (_, reason, _) in SOURCES.items() if reason is not None],
)
def test_heartbeat_keeps_state_reason_and_time_and_replaces_message(source: str) -> None:
    """The current reason again: no transition, same state, reason and lastTransitionTime; a
    changed message replaces the old one (and is written), an unchanged one writes nothing."""
    run = _from(source)
    state, reason, _ = SOURCES[source]
    assert reason is not None
    run.at(5 * MIN).report(reason, MC, "still so")
    expect(
        run,
        verdict=V.HEARTBEAT,
        state=state,
        reason=reason,
        condition_reason=reason.value,
        message="still so",
        changed_at=T0,
        written=True,
    )
    run.at(6 * MIN).report(reason, MC, "still so")
    expect(run, verdict=V.HEARTBEAT, changed_at=T0, message="still so", written=False)


@pytest.mark.parametrize(
    ("earlier", "changed"),
    [
        pytest.param([], {MC: 2, UWL: 2}, id="first-update-successful-is-accepted"),
        pytest.param(
            [(MIN, R.UPDATE_SUCCESSFUL, MC)], {MC: 1, UWL: 2}, id="first-report-per-collector"
        ),
    ],
)
def test_first_report_is_never_a_heartbeat(
    earlier: list[tuple[Any, ...]], changed: dict[str, int]
) -> None:
    """A collector that has never been reported on is `Progressing` with no reason: its first
    `UpdateSuccessful` is the transition `Progressing -> Progressing` that sets the reason."""
    run = Run.begin()
    run.play(earlier)
    run.at(2 * MIN).report(R.UPDATE_SUCCESSFUL, None, "deployed")
    expect(run, verdict=V.ACCEPTED, written=True)
    for name, minute in changed.items():
        expect(
            run,
            collector=name,
            state=S.PROGRESSING,
            reason=R.UPDATE_SUCCESSFUL,
            condition_reason="UpdateSuccessful",
            changed_at=T0 + timedelta(minutes=minute),
        )


@pytest.mark.parametrize(
    ("raw_message", "kept"),
    [
        pytest.param({}, "metrics sent", id="heartbeat-without-message-keeps-it"),
        pytest.param({"message": ""}, "", id="heartbeat-with-empty-message-replaces-it"),
        pytest.param(
            {"message": "batch 2"}, "batch 2", id="heartbeat-with-new-message-replaces-it"
        ),
    ],
)
def test_a_heartbeat_changes_the_message_only_when_it_carries_one(
    raw_message: dict[str, str], kept: str
) -> None:
    from datetime import UTC, datetime, timedelta

    from statemachines import Config, apply, parse_report, start

    config = Config.create(collectors=["metrics-collector"])
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    first = {
        "collector": "metrics-collector",
        "reason": "ForwardSuccessful",
        "message": "metrics sent",
    }
    state = apply(start(config, t0), parse_report(first, config), t0, config=config).state
    again = parse_report(
        {"collector": "metrics-collector", "reason": "ForwardSuccessful", **raw_message}, config
    )
    outcome = apply(state, again, t0 + timedelta(minutes=5), config=config)
    assert outcome.verdict is not None and outcome.verdict.kind.value == "heartbeat"
    assert outcome.state.collector("metrics-collector").message == kept
    assert (outcome.conditions is None) == (kept == "metrics sent")  # no change, no write


def test_every_refusal_rule_is_in_the_vocabulary() -> None:
    """One vocabulary for rules: whatever the core refuses, over the whole (state, reason) grid
    and with generations older and newer than allowed, names a `Rule` of the vocabulary, and
    every `Rule` is produced by something."""
    produced: set[object] = set()
    for source in SOURCES:
        for reason in IDS:
            for generation in (None, 1, 3):
                run = Run.begin(collectors=[MC], generation=2)
                for step in SOURCES[source][2]:
                    run.report(step, MC, "reached", generation=2)
                verdict = run.at(MIN).report(reason, MC, "probe", generation=generation).verdict
                assert verdict is not None
                if verdict.kind is V.REFUSED:
                    assert isinstance(verdict.rule, Rule), verdict
                    produced.add(verdict.rule)
                else:
                    assert verdict.rule is None, verdict
    assert produced == set(Rule)


def test_a_refusal_logs_no_warning(caplog: pytest.LogCaptureFixture) -> None:
    """A refusal is a verdict, not a problem: the `transitions` library, even at DEBUG, logs no
    warning for one (no row, or a failing guard)."""
    caplog.set_level(logging.DEBUG, logger="transitions")
    run = _from("disabled")
    expect(run, run.report(R.FORWARD_SUCCESSFUL, MC), rule=Rule.NO_TRANSITION)
    run = _from("degraded-update")
    expect(run, run.report(R.FORWARD_SUCCESSFUL, MC), rule=Rule.REQUIRES_FORWARD_FAILURE)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
