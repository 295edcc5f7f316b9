"""docs/spec.md §9, versions and related objects: a version comes only with
`UpdateSuccessful` (else bad input naming `version`; at most 64 characters); the desired version
is taken from an accepted update, the installed one moves when the collector is next Available
after it, an `UpdateFailure` keeps it; `status.versions` lists the installed ones; the addon's
message says `updating A -> B` while they differ; everything survives a restart. Related
objects: what the configuration (and the shell, through it) names, each once, in order."""

from __future__ import annotations

import pytest

from statemachines.config import Config
from statemachines.core import start
from statemachines.errors import ReportError
from statemachines.related import RelatedObject
from statemachines.reports import parse_report
from statemachines.stored import to_status
from tests.core.conftest import MC, MIN, T0, UWL, Run
from tests.names import R, T

CONFIG = Config.create()


def _installed(run: Run) -> dict[str, str]:
    return {v["name"]: v["version"] for v in to_status(run.state).get("versions", [])}


def _updated_to_2_14(run: Run) -> Run:
    run.report(R.UPDATE_SUCCESSFUL, MC, "deployed", version="2.14.0")
    run.at(MIN).report(R.FORWARD_SUCCESSFUL, MC, "sent")
    return run


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        pytest.param(
            {"reason": "UpdateFailure", "version": "2.15.0"}, "only an UpdateSuccessful",
            id="a-version-comes-only-with-update-successful",
        ),
        pytest.param(
            {"reason": "UpdateSuccessful", "version": "v" * 65}, "1 to 64 characters",
            id="a-version-has-at-most-64-characters",
        ),
        pytest.param(
            {"reason": "UpdateSuccessful", "version": 2.15}, "a string",
            id="a-version-is-a-string",
        ),
    ],
)  # fmt: skip
def test_a_bad_version_is_bad_input_naming_the_field(raw: dict[str, object], problem: str) -> None:
    with pytest.raises(ReportError) as raised:
        parse_report(raw, CONFIG)
    assert raised.value.field == "version"
    assert problem in raised.value.problem


def test_a_version_of_64_characters_is_taken() -> None:
    assert parse_report({"reason": "UpdateSuccessful", "version": "v" * 64}, CONFIG).version


def test_the_installed_version_moves_when_the_collector_is_next_available() -> None:
    run = Run.begin(collectors=[MC])
    run.report(R.UPDATE_SUCCESSFUL, MC, version="2.14.0")
    assert (run.collector().desired_version, _installed(run)) == ("2.14.0", {})
    run.at(MIN).report(R.FORWARD_SUCCESSFUL)
    assert _installed(run) == {MC: "2.14.0"}


def test_an_update_failure_keeps_the_installed_version() -> None:
    run = _updated_to_2_14(Run.begin(collectors=[MC]))
    run.at(2 * MIN).report(R.UPDATE_SUCCESSFUL, version="2.15.0")
    run.at(3 * MIN).report(R.UPDATE_FAILURE, message="image pull failed")
    assert _installed(run) == {MC: "2.14.0"}
    run.at(4 * MIN).report(R.UPDATE_SUCCESSFUL, version="2.15.0")
    run.at(5 * MIN).report(R.FORWARD_SUCCESSFUL)
    assert _installed(run) == {MC: "2.15.0"}


def test_while_an_update_is_under_way_the_addons_message_says_so() -> None:
    run = _updated_to_2_14(Run.begin(collectors=[MC]))
    run.at(2 * MIN).report(R.UPDATE_SUCCESSFUL, message="rolling out", version="2.15.0")
    expected = "MetricsCollector: UpdateSuccessful, updating 2.14.0 -> 2.15.0 (rolling out)"
    assert run.condition(T.PROGRESSING).message == expected
    run.at(3 * MIN).report(R.FORWARD_SUCCESSFUL, message="sent")
    assert run.condition(T.AVAILABLE).message == "MetricsCollector: ForwardSuccessful (sent)"


def test_versions_list_only_collectors_whose_installed_version_is_known() -> None:
    run = _updated_to_2_14(Run.begin())
    assert to_status(run.state)["versions"] == [{"name": MC, "version": "2.14.0"}]
    assert run.collector(UWL).version is None


def test_versions_survive_a_restart() -> None:
    run = _updated_to_2_14(Run.begin(collectors=[MC]))
    run.at(2 * MIN).report(R.UPDATE_SUCCESSFUL, version="2.15.0")
    before = run.collector()
    after = run.restart(3 * MIN).collector()
    assert (after.version, after.desired_version) == (before.version, before.desired_version)
    assert "updating 2.14.0 -> 2.15.0" in run.condition(T.PROGRESSING).message


def test_related_objects_are_what_the_configuration_names_each_once_in_order() -> None:
    """The configuration's own, after what the shell names first (the addon CR, the Lease)."""
    deployment = RelatedObject("apps", "deployments", "metrics-collector", "ns")
    addon = RelatedObject("observability.open-cluster-management.io", "observabilityaddons", "a")
    config = Config.create(related_objects=[deployment]).with_related(addon, deployment)
    status = to_status(start(config, T0))
    assert status["relatedObjects"] == [addon.to_api(), deployment.to_api()]
