"""docs/spec.md §5, aggregation into the standard conditions: the operator's
overrides first (`NotSupported`, then `Disabled`, of the primary collector; a switched-off
user-workload collector does not count), then the precedence table as the full table of pairs
`ForwardFailure > ReportsStale > UpdateFailure > UpdateSuccessful > ForwardSuccessful` (a
collector not reported on yet counts as `UpdateSuccessful`), the message that names every
collector, and the meaningful reason of the conditions that are False.
"""

from __future__ import annotations

from itertools import product
from typing import Any

import pytest

from statemachines.vocabulary import ConditionType, Reason
from tests.core.conftest import MC, MIN, STANDARD, UWL, Run, Target, expect, reach
from tests.names import DM, FF, FS, NS, RS, UF, US, S, T


@pytest.mark.parametrize(
    ("mc", "uwl", "order", "addon", "kept"),
    [
        pytest.param(Target(NS), Target(FF), None, T.NOT_SUPPORTED, NS,
                     id="primary-not-supported-overrides-everything"),
        pytest.param(Target(NS), Target(DM), None, T.NOT_SUPPORTED, NS,
                     id="primary-not-supported-before-disabled"),
        pytest.param(Target(DM), Target(FF), None, T.DISABLED, DM,
                     id="primary-disabled-overrides-the-table"),
        pytest.param(Target(DM), Target(NS), None, T.DISABLED, DM,
                     id="primary-disabled-beside-unsupported-uwl"),
        pytest.param(Target(DM), Target(FS, stale=True), None, T.DISABLED, DM,
                     id="primary-disabled-overrides-a-stale-uwl"),
        pytest.param(Target(DM), Target(FS), [UWL, MC], T.DISABLED, DM,
                     id="primary-is-primary-whatever-the-order"),
        pytest.param(Target(FS), Target(DM), None, T.AVAILABLE, FS,
                     id="disabled-uwl-does-not-count"),
        pytest.param(Target(FS), Target(NS), None, T.AVAILABLE, FS,
                     id="unsupported-uwl-does-not-count"),
        pytest.param(Target(FF), Target(DM), None, T.DEGRADED, FF,
                     id="disabled-uwl-beside-failing-primary"),
        pytest.param(Target(None), Target(DM), None, T.PROGRESSING, US,
                     id="disabled-uwl-beside-unreported-primary"),
        pytest.param(Target(UF), Target(NS), None, T.DEGRADED, UF,
                     id="unsupported-uwl-beside-failed-update"),
    ],
)  # fmt: skip
def test_operator_overrides_come_before_the_table(
    mc: Target, uwl: Target, order: list[str] | None, addon: ConditionType, kept: Reason
) -> None:
    run = reach({MC: mc, UWL: uwl}, order=order)
    expect(run, addon=addon, addon_reason=kept)


# docs/spec.md §5's order, strongest first, and the type each kept reason makes True.
PRECEDENCE = [FF, RS, UF, US, FS]
LEADS_TO = {FF: T.DEGRADED, RS: T.DEGRADED, UF: T.DEGRADED, US: T.PROGRESSING, FS: T.AVAILABLE}
# What a collector contributes, and how to get it there.
CONTRIBUTIONS = {
    "forward-failure": (Target(FF), FF),
    "reports-stale": (Target(FS, stale=True), RS),
    "update-failure": (Target(UF), UF),
    "update-successful": (Target(US), US),
    "not-reported": (Target(None), US),
    "forward-successful": (Target(FS), FS),
}


def _pairs() -> list[Any]:
    rows = []
    for (a, (ta, ra)), (b, (tb, rb)) in product(CONTRIBUTIONS.items(), repeat=2):
        kept = min(ra, rb, key=PRECEDENCE.index)
        rows.append(pytest.param(ta, tb, kept, id=f"{a}+{b}"))
    return rows


@pytest.mark.parametrize(("mc", "uwl", "kept"), _pairs())
def test_precedence_keeps_the_strongest_reason(mc: Target, uwl: Target, kept: Reason) -> None:
    """Every pair of contributions (metrics collector + uwl collector): the reason with the
    highest precedence is kept, makes its type True and is the reason of every standard
    condition; a collector not reported on yet counts as UpdateSuccessful."""
    run = reach({MC: mc, UWL: uwl})
    expect(run, addon=LEADS_TO[kept], addon_reason=kept)
    assert {run.condition(t).reason for t in STANDARD} == {kept.value}


@pytest.mark.parametrize(
    ("other", "addon", "kept"),
    [
        pytest.param(None, T.PROGRESSING, US, id="alone"),
        pytest.param(Target(FS), T.PROGRESSING, US, id="beside-forwarding"),
        pytest.param(Target(None), T.PROGRESSING, US, id="beside-another-unreported"),
        pytest.param(Target(UF), T.DEGRADED, UF, id="below-update-failure"),
    ],
)
def test_not_yet_reported_collector_counts_as_update_successful(
    other: Target | None, addon: ConditionType, kept: Reason
) -> None:
    """In the aggregation only: its own machine is Progressing with no reason, and its own
    condition says NoReportYet."""
    run = reach({MC: Target(None)} if other is None else {MC: Target(None), UWL: other})
    expect(run, addon=addon, addon_reason=kept)
    expect(run, state=S.PROGRESSING, reason=None, condition_reason="NoReportYet")


EXAMPLE = (
    "MetricsCollector: ForwardSuccessful (metrics sent); "
    "UwlMetricsCollector: ForwardFailure (remote write 503)"
)


@pytest.mark.parametrize(
    ("order", "reports", "message"),
    [
        pytest.param(None, [(MC, FS, "metrics sent"), (UWL, FF, "remote write 503")], EXAMPLE,
                     id="contract-example"),
        pytest.param([UWL, MC], [(UWL, FF, "remote write 503"), (MC, FS, "metrics sent")],
                     EXAMPLE, id="contract-example-whatever-the-order"),
        pytest.param([MC], [(MC, FS, "metrics sent")],
                     "MetricsCollector: ForwardSuccessful (metrics sent)", id="one-collector"),
        pytest.param(None, [(MC, FS, "metrics sent")],
                     "MetricsCollector: ForwardSuccessful (metrics sent); "
                     "UwlMetricsCollector: NoReportYet (no report yet)",
                     id="names-a-collector-not-reported-on"),
        pytest.param(None, [(MC, FS, "metrics sent"), (UWL, DM, "uwl off")],
                     "MetricsCollector: ForwardSuccessful (metrics sent); "
                     "UwlMetricsCollector: DisabledMetrics (uwl off)",
                     id="names-a-collector-that-does-not-count"),
    ],
)  # fmt: skip
def test_message_names_every_collector_and_its_own_state(
    order: list[str] | None, reports: list[tuple[str, Reason, str]], message: str
) -> None:
    run = Run.begin(collectors=order)
    for name, reason, text in reports:
        run.report(reason, name, text)
    run.at(MIN)
    [true] = [run.condition(t) for t in STANDARD if run.condition(t).status == "True"]
    assert true.message == message
    for type_ in STANDARD:  # a False one names the True one, not its message again (§5)
        if type_ != true.type:
            assert run.condition(type_).message == f"the addon is {true.type}", type_


@pytest.mark.parametrize(
    ("targets", "addon", "kept"),
    [
        pytest.param({MC: Target(FS), UWL: Target(FS)}, T.AVAILABLE, FS, id="available"),
        pytest.param({MC: Target(FS), UWL: Target(FF)}, T.DEGRADED, FF, id="degraded"),
        pytest.param({MC: Target(None), UWL: Target(None)}, T.PROGRESSING, US, id="progressing"),
        pytest.param({MC: Target(DM), UWL: Target(FS)}, T.DISABLED, DM, id="disabled"),
        pytest.param({MC: Target(NS), UWL: Target(FS)}, T.NOT_SUPPORTED, NS, id="not-supported"),
        pytest.param({MC: Target(FS, stale=True), UWL: Target(FS)}, T.DEGRADED, RS, id="stale"),
    ],
)  # fmt: skip
def test_false_conditions_carry_a_meaningful_reason(
    targets: dict[str, Target], addon: ConditionType, kept: Reason
) -> None:
    """The standard conditions that are False say why (the kept reason) and name the True one
    in their message, which alone names every collector; none is left without a reason."""
    run = reach(targets)
    expect(run, addon=addon, addon_reason=kept)
    true = run.condition(addon)
    for type_ in STANDARD:
        cond = run.condition(type_)
        assert cond.status == ("True" if type_ is addon else "False")
        message = true.message if type_ is addon else f"the addon is {addon.value}"
        assert (cond.reason, cond.message) == (kept.value, message)
    assert true.message.startswith("MetricsCollector: ")
    assert "; UwlMetricsCollector: " in true.message
