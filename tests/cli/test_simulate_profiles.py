"""Scenarios under `profile: acm` (docs/spec.md §11): expectations use the names that profile writes
(`addon`, `conditions`, `collectors`); a name of the other profile, a standard type the profile
does not write, or an unknown profile is an invalid file naming the field."""

from __future__ import annotations

import pytest

from statemachines.errors import ScenarioError
from statemachines.scenario import load
from statemachines.simulation import run
from statemachines.vocabulary import ACM

ACM_SCENARIO = """
profile: acm
settings: {degradeAfter: 0s}
steps:
  - at: 0s
    report: {reason: UpdateSuccessful}
  - at: 1m
    report: {collector: metrics-collector, reason: ForwardFailure, message: "remote write 503"}
    expect:
      addon: %s
      conditions: {%s: {status: "True", reason: %s}}
"""


def test_an_acm_scenario_expects_the_acm_names() -> None:
    scenario = load(ACM_SCENARIO % ("Degraded", "MetricsCollector", "ForwardFailed"))
    assert scenario.config.profile is ACM
    assert run(scenario).ok


@pytest.mark.parametrize(
    ("addon", "type_", "reason", "where", "problem"),
    [
        pytest.param(
            "Degraded",
            "MetricsCollector",
            "ForwardFailure",
            "steps[1].expect.conditions.MetricsCollector.reason",
            "'ForwardFailure' is not a reason the acm profile writes",
            id="seed-reason",
        ),
        pytest.param(
            "Degraded",
            "MetricsCollectorStatus",
            "ForwardFailed",
            "steps[1].expect.conditions.MetricsCollectorStatus",
            "unknown; expected one of",
            id="seed-condition-type",
        ),
        pytest.param(
            "Disabled",
            "MetricsCollector",
            "ForwardFailed",
            "steps[1].expect.addon",
            "not a standard type of the acm profile (Available, Progressing, Degraded)",
            id="seed-standard-type",
        ),
    ],
)
def test_an_acm_scenario_refuses_the_other_profiles_names(
    addon: str, type_: str, reason: str, where: str, problem: str
) -> None:
    with pytest.raises(ScenarioError) as error:
        load(ACM_SCENARIO % (addon, type_, reason))
    assert error.value.field == where
    assert problem in error.value.problem


def test_an_unknown_profile_is_an_invalid_scenario() -> None:
    with pytest.raises(ScenarioError) as error:
        load("profile: ocm\nsteps: [{at: 0s, report: {reason: UpdateSuccessful}}]")
    assert (error.value.field, error.value.problem) == (
        "profile",
        "unknown profile 'ocm'; known: seed, acm",
    )
