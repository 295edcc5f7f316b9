"""docs/spec.md §1, the vocabulary: the reasons table (who reports a reason
and where it leads), exactly one standard type True, the operator's report to every collector
as one step, bad input as an error naming the field (never a verdict), the seed's misspelled
alias, the collectors' own conditions, and that every reason a machine row can emit or the
aggregation can keep is a row of the one vocabulary table.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from statemachines.config import Config
from statemachines.errors import ReportError
from statemachines.machines import COLLECTOR_ROWS, OPERATOR_ROWS
from statemachines.reports import Report, VerdictKind, parse_report
from statemachines.stored import to_status
from statemachines.vocabulary import READY, SEED, Actor, ConditionType, ReadyReason, Reason, State
from tests.core.conftest import MC, MIN, T0, UWL, Run, Target, expect, reach
from tests.names import R, S, V


@pytest.mark.parametrize(
    ("reason", "reported_by", "leads_to"),
    [
        pytest.param(R.FORWARD_FAILURE, Actor.METRICS_COLLECTOR, S.DEGRADED, id="forward-failure"),
        pytest.param(
            R.FORWARD_SUCCESSFUL, Actor.METRICS_COLLECTOR, S.AVAILABLE, id="forward-successful"
        ),
        pytest.param(R.UPDATE_FAILURE, Actor.ENDPOINT_OPERATOR, S.DEGRADED, id="update-failure"),
        pytest.param(
            R.UPDATE_SUCCESSFUL, Actor.ENDPOINT_OPERATOR, S.PROGRESSING, id="update-successful"
        ),
        pytest.param(
            R.DISABLED_METRICS, Actor.ENDPOINT_OPERATOR, S.DISABLED, id="disabled-metrics"
        ),
        pytest.param(R.NOT_SUPPORTED, Actor.ENDPOINT_OPERATOR, S.NOT_SUPPORTED, id="not-supported"),
    ],
)
def test_reason_is_reported_by_its_actor_and_leads_to_its_type(
    reason: Reason, reported_by: Actor, leads_to: State
) -> None:
    """The table of docs/spec.md §1, as data and as behaviour: the first report of the reason
    about a collector puts it (and, with one collector, the addon) in the type the reason leads
    to; a collector's own reason must name the collector, an operator's may name none."""
    spec = SEED.spec(reason)
    assert (spec.reported_by, spec.leads_to) == (reported_by, leads_to)

    run = Run.begin(collectors=[MC])
    run.at(MIN).report(reason, MC, "first")
    expect(run, verdict=V.ACCEPTED, state=leads_to, reason=reason, addon=leads_to)

    config = Config.create(collectors=[MC])
    if reported_by is Actor.METRICS_COLLECTOR:
        with pytest.raises(ReportError) as error:
            parse_report({"reason": reason.value}, config)
        assert error.value.field == "collector"
    else:
        assert parse_report({"reason": reason.value}, config).collector is None


def test_vocabulary_spells_types_and_reasons_as_the_contract() -> None:
    """The wire spellings are the contract's; the controller's own reason is not reportable."""
    assert [t.value for t in ConditionType] == [
        "Available",
        "Degraded",
        "Progressing",
        "Disabled",
        "NotSupported",
    ]
    assert sorted(SEED.reportable()) == sorted(
        [
            "ForwardFailure",
            "ForwardSuccessful",
            "UpdateFailure",
            "UpdateSuccessful",
            "DisabledMetrics",
            "NotSupported",
        ]
    )
    assert [(c.name, c.condition_type, c.primary) for c in SEED.collectors] == [
        ("metrics-collector", "MetricsCollectorStatus", True),
        ("uwl-metrics-collector", "UwlMetricsCollectorStatus", False),
    ]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([], id="before-any-report"),
        pytest.param(
            [(MIN, R.FORWARD_SUCCESSFUL, MC), (MIN, R.FORWARD_SUCCESSFUL, UWL)], id="available"
        ),
        pytest.param([(MIN, R.FORWARD_FAILURE, UWL)], id="degraded"),
        pytest.param([(MIN, R.DISABLED_METRICS, None)], id="disabled"),
        pytest.param([(MIN, R.NOT_SUPPORTED, MC)], id="not-supported"),
        pytest.param([(MIN, R.UPDATE_SUCCESSFUL, None)], id="progressing"),
        pytest.param([(20 * MIN, None)], id="stale"),
    ],
)
def test_exactly_one_standard_type_is_true(steps: list[tuple[Any, ...]]) -> None:
    run = Run.begin()
    run.play(steps)
    standard = [c for c in run.state.conditions if c.type in set(ConditionType)]
    assert sorted(c.type for c in standard) == sorted(ConditionType)
    assert [c.status for c in standard].count("True") == 1
    assert {c.status for c in standard} == {"True", "False"}


@pytest.mark.parametrize(
    ("before", "reason", "verdict", "after", "rule"),
    [
        pytest.param(
            {MC: None, UWL: None},
            R.UPDATE_SUCCESSFUL,
            V.ACCEPTED,
            {MC: (S.PROGRESSING, R.UPDATE_SUCCESSFUL), UWL: (S.PROGRESSING, R.UPDATE_SUCCESSFUL)},
            None,
            id="every-collector-accepts",
        ),
        pytest.param(
            {MC: R.UPDATE_SUCCESSFUL, UWL: None},
            R.UPDATE_SUCCESSFUL,
            V.ACCEPTED,
            {MC: (S.PROGRESSING, R.UPDATE_SUCCESSFUL), UWL: (S.PROGRESSING, R.UPDATE_SUCCESSFUL)},
            None,
            id="accepted-beats-heartbeat",
        ),
        pytest.param(
            {MC: R.DISABLED_METRICS, UWL: R.DISABLED_METRICS},
            R.DISABLED_METRICS,
            V.HEARTBEAT,
            {MC: (S.DISABLED, R.DISABLED_METRICS), UWL: (S.DISABLED, R.DISABLED_METRICS)},
            None,
            id="every-collector-heartbeat",
        ),
        pytest.param(
            {MC: R.FORWARD_SUCCESSFUL, UWL: None},
            R.NOT_SUPPORTED,
            V.REFUSED,
            {MC: (S.AVAILABLE, R.FORWARD_SUCCESSFUL), UWL: (S.PROGRESSING, None)},
            "NoTransition",
            id="one-refuses-nothing-changes",
        ),
        pytest.param(
            {MC: R.UPDATE_FAILURE, UWL: R.FORWARD_FAILURE},
            R.UPDATE_FAILURE,
            V.ACCEPTED,
            {MC: (S.DEGRADED, R.UPDATE_FAILURE), UWL: (S.DEGRADED, R.UPDATE_FAILURE)},
            None,
            id="update-failure-reaches-every-collector",
        ),
    ],
)
def test_report_without_collector_is_one_step_for_every_collector(
    before: dict[str, Reason | None],
    reason: Reason,
    verdict: VerdictKind,
    after: dict[str, tuple[State, Reason | None]],
    rule: str | None,
) -> None:
    """Refused if any collector refuses (then nothing changes, not even for the others);
    otherwise the strongest verdict among the collectors: accepted > pending > heartbeat."""
    run = reach({name: Target(r) for name, r in before.items()})
    collectors_before = run.state.collectors
    run.at(2 * MIN)
    outcome = run.report(reason, None, "to everyone")
    assert outcome.verdict is not None and outcome.verdict.collector is None
    expect(run, verdict=verdict, rule=rule)
    for name, (state, r) in after.items():
        expect(run, collector=name, state=state, reason=r)
    if verdict is V.REFUSED:
        assert run.state.collectors == collectors_before
        expect(run, written=False)
        # the refusal names the refusing collector's state and reason
        assert (outcome.verdict.state, outcome.verdict.reason) == (
            S.AVAILABLE,
            R.FORWARD_SUCCESSFUL,
        )


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        pytest.param({"collector": "logging-collector", "reason": "ForwardFailure"}, "collector",
                     id="unknown-collector"),
        pytest.param({"collector": UWL, "reason": "UpdateFailure"}, "collector",
                     id="collector-of-the-profile-not-configured"),
        pytest.param({"collector": 7, "reason": "UpdateFailure"}, "collector",
                     id="collector-not-a-string"),
        pytest.param({"reason": "ForwardFailure"}, "collector",
                     id="collector-reason-without-collector"),
        pytest.param({"collector": MC, "reason": "Flapping"}, "reason", id="unknown-reason"),
        pytest.param({"collector": MC, "reason": "ReportsStale"}, "reason",
                     id="controllers-own-reason-not-reportable"),
        pytest.param({"collector": MC, "reason": "NoReportYet"}, "reason",
                     id="sentinel-not-reportable"),
        pytest.param({"collector": MC, "reason": "forwardfailure"}, "reason",
                     id="reason-is-case-sensitive"),
        pytest.param({"collector": MC}, "reason", id="reason-missing"),
        pytest.param({"collector": MC, "reason": 3}, "reason", id="reason-not-a-string"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "message": 5}, "message",
                     id="message-not-a-string"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "observedGeneration": -1},
                     "observedGeneration", id="generation-negative"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "observedGeneration": True},
                     "observedGeneration", id="generation-boolean"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "observedGeneration": "3"},
                     "observedGeneration", id="generation-string"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "observedGeneration": 2**63},
                     "observedGeneration", id="generation-beyond-int64"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "observedGeneration": 10**21},
                     "observedGeneration", id="generation-far-beyond-int64"),
        pytest.param({"collector": MC, "reason": "UpdateFailure", "severity": "high"},
                     "severity", id="unknown-field"),
        pytest.param(["UpdateFailure"], "", id="not-an-object"),
    ],
)  # fmt: skip
def test_bad_report_is_an_error_naming_the_field(raw: object, field: str) -> None:
    """Bad input is a ReportError naming the field, not a verdict."""
    config = Config.create(collectors=[MC])
    with pytest.raises(ReportError) as error:
        parse_report(raw, config)
    assert error.value.field == field
    assert str(error.value).startswith(f"{field}: " if field else "")


@pytest.mark.parametrize(
    ("generation", "valid"),
    [(0, True), (2**63 - 1, True), (2**63, False), (-1, False), (10**21, False)],
)
def test_a_report_holds_only_an_int64_generation(generation: int, valid: bool) -> None:
    """The CR stores observedGeneration as an int64: the core's report refuses anything else,
    however it was built."""
    if valid:
        assert Report(Reason.UPDATE_FAILURE, MC, None, generation).observed_generation == generation
    else:
        with pytest.raises(ReportError, match=r"^observedGeneration: "):
            Report(Reason.UPDATE_FAILURE, MC, None, generation)


def test_misspelled_update_successful_is_accepted_and_written_correctly() -> None:
    """The seed's `UpdateSuccesful` is an alias on input; only `UpdateSuccessful` is written."""
    run = Run.begin()
    run.at(MIN)
    report = parse_report({"collector": MC, "reason": "UpdateSuccesful"}, run.config)
    assert report.reason is R.UPDATE_SUCCESSFUL
    run.report("UpdateSuccesful", None, "deployed")
    expect(run, verdict=V.ACCEPTED, reason=R.UPDATE_SUCCESSFUL, condition_reason="UpdateSuccessful")
    expect(run, collector=UWL, reason=R.UPDATE_SUCCESSFUL, condition_reason="UpdateSuccessful")
    expect(run, addon=ConditionType.PROGRESSING, addon_reason=R.UPDATE_SUCCESSFUL)
    written = json.dumps(to_status(run.state))
    assert "UpdateSuccesful" not in written and "UpdateSuccessful" in written
    # the alias and the right spelling are the same reason: the second is a heartbeat
    run.at(2 * MIN).report("UpdateSuccessful", MC, "deployed")
    expect(run, verdict=V.HEARTBEAT, written=False)


@pytest.mark.parametrize(
    ("steps", "status", "reason", "message", "changed"),
    [
        pytest.param([], "True", "NoReportYet", "no report yet", 0, id="no-report-yet"),
        pytest.param(
            [(MIN, R.FORWARD_SUCCESSFUL, MC, "metrics sent")],
            "True", "ForwardSuccessful", "metrics sent", 1,
            id="last-accepted-transition",
        ),
        pytest.param(
            [(MIN, R.FORWARD_SUCCESSFUL, MC, "sent"), (3 * MIN, R.FORWARD_SUCCESSFUL, MC, "again")],
            "True", "ForwardSuccessful", "again", 1,
            id="heartbeat-replaces-message-keeps-time",
        ),
        pytest.param(
            [(MIN, R.FORWARD_SUCCESSFUL, MC, "sent"), (3 * MIN, R.FORWARD_FAILURE, MC, "503")],
            "True", "ForwardSuccessful", "sent", 1,
            id="pending-failure-not-shown",
        ),
        pytest.param(
            [(MIN, R.UPDATE_FAILURE, MC, "bad image"), (3 * MIN, R.FORWARD_SUCCESSFUL, MC, "ok")],
            "True", "UpdateFailure", "bad image", 1,
            id="refused-report-not-shown",
        ),
        pytest.param(
            [(MIN, R.FORWARD_FAILURE, MC, "503"), (4 * MIN, R.UPDATE_FAILURE, MC, "bad image")],
            "True", "UpdateFailure", "bad image", 4,
            id="reason-change-moves-time",
        ),
        pytest.param(
            [(MIN, R.FORWARD_SUCCESSFUL, MC, "sent"), (20 * MIN, None)],
            "Unknown", "ReportsStale", None, 16,
            id="stale-is-unknown",
        ),
    ],
)  # fmt: skip
def test_collector_condition_shows_last_accepted_transition(
    steps: list[tuple[Any, ...]], status: str, reason: str, message: str | None, changed: int
) -> None:
    """`MetricsCollectorStatus`: reason and message of the last accepted transition, True (or
    Unknown while stale), and the time of the last change of state or reason."""
    run = Run.begin(collectors=[MC])
    run.play(steps)
    cond = run.collector_condition(MC)
    assert cond.type == "MetricsCollectorStatus"
    assert (cond.status, cond.reason) == (status, reason)
    if message is not None:
        assert cond.message == message
    assert cond.last_transition_time == T0 + changed * MIN


def test_every_emitted_reason_is_in_the_vocabulary_table() -> None:
    """One vocabulary table: a machine row emits its trigger as the collector's reason and moves to
    the type the table says; the aggregation keeps a collector's reason, `ReportsStale`, or the
    operator's override reasons; a collector's condition may say `NoReportYet`. All are rows."""
    table = {row.reason: row for row in SEED.reasons}
    for row in (*OPERATOR_ROWS, *COLLECTOR_ROWS):
        assert row.trigger in table, row
        assert table[row.trigger].reported_by is not None, row
        assert table[row.trigger].leads_to is row.dest, row
    operator = {row.trigger for row in OPERATOR_ROWS}
    collector = {row.trigger for row in COLLECTOR_ROWS}
    assert all(table[r].reported_by is Actor.ENDPOINT_OPERATOR for r in operator)
    assert all(table[r].reported_by is Actor.METRICS_COLLECTOR for r in collector)
    aggregated = {*operator, *collector, R.REPORTS_STALE, R.NO_REPORT_YET}
    assert aggregated <= set(table)
    ranked = [row.reason.value for row in sorted(SEED.reasons, key=lambda r: -(r.precedence or 0))]
    assert ranked[:6] == [
        "ForwardFailure",
        "ResourceUnhealthy",
        "ReportsStale",
        "UpdateFailure",
        "UpdateSuccessful",
        "ForwardSuccessful",
    ]
    # every reason the running core wrote is a row too (a quick run through every type)
    run = Run.begin()
    run.play(
        [
            (MIN, R.UPDATE_SUCCESSFUL, None),
            (2 * MIN, R.FORWARD_SUCCESSFUL, MC),
            (3 * MIN, R.FORWARD_FAILURE, UWL),
            (4 * MIN, R.UPDATE_FAILURE, UWL),
            (5 * MIN, R.DISABLED_METRICS, UWL),
            (30 * MIN, None),
        ]
    )
    written = {c.reason for c in run.state.conditions if c.type != READY}
    assert {Reason(r) for r in written} <= set(table)
    # Ready's reasons are a table of their own (docs/spec.md §10)
    ready = next(c for c in run.state.conditions if c.type == READY)
    assert ReadyReason(ready.reason)
