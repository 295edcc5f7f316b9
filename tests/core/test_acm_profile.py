"""docs/spec.md §11, the `acm` profile: the same rules under the names the
shipped observability addon writes — standard types `Available`, `Progressing`, `Degraded`
only, collector conditions `MetricsCollector` and `UwlMetricsCollector`, reasons
`UpdateFailed`, `ForwardFailed`, `Disabled`, upstream's precedence, `Disabled` and
`NotSupported` as `Degraded=True` — reports in either profile's names, and the split of the
stored state between the CR (what the upstream CRD keeps) and the bookkeeping beside it."""

from __future__ import annotations

import pytest

from statemachines.config import Config
from statemachines.placement import UPSTREAM_CONDITION_FIELDS, bookkeeping, on_cr
from statemachines.reports import VerdictKind, parse_report
from statemachines.stored import to_status
from statemachines.vocabulary import ACM, SEED, ConditionType, Profile, Reason
from tests.core.conftest import MC, MIN, T0, UWL, Run

T = ConditionType


def acm(**settings: object) -> Run:
    return Run.begin(profile=ACM, settings={"degradeAfter": "0s", **settings})


def test_acm_writes_only_the_three_standard_types_and_its_collector_conditions() -> None:
    run = acm()
    run.at(MIN).report("UpdateSuccessful", None)
    assert [c["type"] for c in on_cr(run.state, ACM)["conditions"]] == [
        "Available",
        "Progressing",
        "Degraded",
        "MetricsCollector",
        "UwlMetricsCollector",
    ]
    assert run.addon() is T.PROGRESSING
    # Ready (docs/spec.md §10) is kept with the bookkeeping, beside the CR (docs/spec.md §11)
    kept = bookkeeping(run.state, ACM)
    assert kept is not None and "Ready" in [c["type"] for c in kept["conditions"]]


@pytest.mark.parametrize(
    ("report", "collector", "written", "addon"),
    [
        pytest.param("ForwardFailed", MC, "ForwardFailed", T.DEGRADED, id="forward-failed"),
        pytest.param("ForwardFailure", MC, "ForwardFailed", T.DEGRADED, id="seed-spelling"),
        pytest.param("UpdateFailed", None, "UpdateFailed", T.DEGRADED, id="update-failed"),
        pytest.param("UpdateSuccesful", None, "UpdateSuccessful", T.PROGRESSING, id="alias"),
        pytest.param("Disabled", None, "Disabled", T.DEGRADED, id="disabled"),
        pytest.param("DisabledMetrics", None, "Disabled", T.DEGRADED, id="disabled-seed-name"),
        pytest.param("NotSupported", None, "NotSupported", T.DEGRADED, id="not-supported"),
    ],
)
def test_acm_writes_its_reason_names_for_either_profiles_report(
    report: str, collector: str | None, written: str, addon: ConditionType
) -> None:
    """Reports may use either profile's names; the CR carries the acm spelling."""
    run = acm()
    run.at(MIN).report(report, collector, "why")
    assert run.addon() is addon
    assert run.condition(addon).reason == written
    assert run.collector_condition(MC).reason == written


def test_the_seed_profile_accepts_the_acm_names_and_writes_its_own() -> None:
    run = Run.begin(settings={"degradeAfter": "0s"})
    run.at(MIN).report("ForwardFailed", MC, "remote write 503")
    assert (run.addon(), run.condition(T.DEGRADED).reason) == (T.DEGRADED, "ForwardFailure")


@pytest.mark.parametrize("reason", ["Disabled", "NotSupported"])
def test_acm_writes_disabled_and_not_supported_as_degraded_true_with_that_reason(
    reason: str,
) -> None:
    run = acm()
    run.at(MIN).report(reason, None)
    degraded = run.condition(T.DEGRADED)
    assert (degraded.status, degraded.reason) == ("True", reason)
    assert [run.condition(t).status for t in (T.AVAILABLE, T.PROGRESSING)] == ["False", "False"]


@pytest.mark.parametrize(
    ("mc", "uwl", "kept"),
    [
        pytest.param("ForwardFailed", "NotSupported", "NotSupported", id="not-supported-first"),
        pytest.param("ForwardFailed", "UpdateFailed", "UpdateFailed", id="update-over-forward"),
        pytest.param("ForwardSuccessful", "ForwardFailed", "ForwardFailed", id="forward-failed"),
        pytest.param("ForwardSuccessful", None, "UpdateSuccessful", id="update-over-forward-ok"),
        pytest.param("ForwardSuccessful", "Disabled", "ForwardSuccessful", id="disabled-last"),
    ],
)
def test_acm_precedence_is_upstreams(mc: str, uwl: str | None, kept: str) -> None:
    """NotSupported > UpdateFailed > ForwardFailed > ResourceUnhealthy > ReportsStale >
    UpdateSuccessful > ForwardSuccessful > Disabled, over the collectors, in either order."""
    run = acm()
    run.at(MIN).report("UpdateSuccessful", None)
    run.report(mc, MC, "mc")
    if uwl is not None:
        run.report(uwl, UWL, "uwl")
    standard = [c for c in run.state.conditions if c.type in ACM.standard_types]
    assert {c.reason for c in standard} == {kept}


def test_acm_precedence_table_ranks_resource_unhealthy_between_forward_failed_and_stale() -> None:
    """The health rules' reason has its slot in the table: the aggregation reads ranks only."""
    rank = {r.reason: r.precedence for r in ACM.reasons}
    assert (
        rank[Reason.FORWARD_FAILURE] > rank[Reason.RESOURCE_UNHEALTHY] > rank[Reason.REPORTS_STALE]
    )
    assert ACM.spec(Reason.RESOURCE_UNHEALTHY).leads_to is T.DEGRADED


def test_a_profile_whose_reason_leads_to_an_unwritten_type_is_refused() -> None:
    rows = tuple(
        r.model_copy(update={"leads_to": T.DISABLED}) if r.reason is Reason.DISABLED_METRICS else r
        for r in ACM.reasons
    )
    with pytest.raises(ValueError, match="not a standard type written"):
        Profile.model_validate({**ACM.model_dump(), "reasons": rows})


def test_acm_lists_its_own_names_as_reportable_and_parses_the_seeds() -> None:
    config = Config.create(profile=ACM)
    assert "ForwardFailed" in ACM.reportable() and "ForwardFailure" not in ACM.reportable()
    assert parse_report({"reason": "UpdateFailure"}, config).reason is Reason.UPDATE_FAILURE
    assert SEED.parse_reason("ResourceUnhealthy") is None  # the controller's own, never reported


def test_on_the_acm_cr_only_the_five_upstream_fields_of_its_conditions() -> None:
    """What the upstream CRD keeps goes on the CR; everything else is bookkeeping."""
    run = acm()
    run.at(MIN).report("ForwardFailed", MC, "remote write 503", generation=1)
    status = on_cr(run.state, ACM)
    assert list(status) == ["conditions"]
    assert {tuple(sorted(c)) for c in status["conditions"]} == {
        tuple(sorted(UPSTREAM_CONDITION_FIELDS))
    }
    assert bookkeeping(run.state, ACM) == to_status(run.state)
    assert bookkeeping(run.state, SEED) is None


def test_an_acm_window_survives_a_restart_from_the_bookkeeping() -> None:
    """The open window lives in the bookkeeping; a restart from it ends the window on time."""
    run = Run.begin(profile=ACM, settings={"degradeAfter": "10m"})
    run.at(MIN).report("ForwardSuccessful", MC)
    run.at(2 * MIN).report("ForwardFailed", MC, "remote write 503")
    assert run.last.verdict is not None and run.last.verdict.kind is VerdictKind.PENDING
    run.restart(5 * MIN)
    assert run.collector(MC).pending is not None
    run.advance(12 * MIN)
    assert run.condition(T.DEGRADED).reason == "ForwardFailed"
    assert run.collector_condition(MC).last_transition_time == T0 + 12 * MIN
