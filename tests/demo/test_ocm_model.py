"""What the demo's model of Open Cluster Management (v1.3) decides, as OCM decides it
(controller/demo/ocm_model.py): the work agent's status feedback of a Deployment, the template
health check's `Available` from it, how a condition is set, and when a lease has expired."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.demo.ocm_model import feedback, lease_expires, probe, probed, set_condition

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
AGENT = ("ns", "agent")


def _work(*values: tuple[str, int], applied: str | None = "True") -> dict[str, Any]:
    """A ManifestWork as the work agent reports it, the agent's Deployment fed back."""
    manifests = [{
        "resourceMeta": {"ordinal": 0, "resource": "deployments", "namespace": "ns",
                         "name": "agent"},
        "statusFeedback": {"values": [{"name": n, "fieldValue": {"type": "Integer", "integer": v}}
                                      for n, v in values]},
    }]  # fmt: skip
    conditions = (
        []
        if applied is None
        else [{"type": "Available", "status": applied, "message": "some resources are missing"}]
    )
    return {"status": {"conditions": conditions, "resourceStatus": {"manifests": manifests}}}


def test_the_feedback_of_a_deployment_leaves_out_what_its_status_leaves_out() -> None:
    ready = {"status": {"replicas": 2, "readyReplicas": 1, "availableReplicas": 1}}
    assert [(v["name"], v["fieldValue"]["integer"]) for v in feedback(ready)] == [
        ("ReadyReplicas", 1), ("Replicas", 2), ("AvailableReplicas", 1)]  # fmt: skip
    down = {"status": {"replicas": 1, "readyReplicas": 0, "unavailableReplicas": 1}}
    assert [v["name"] for v in feedback(down)] == ["Replicas"]
    assert feedback({}) == []


@pytest.mark.parametrize(
    ("work", "expected"),
    [
        (None, ("Unknown", "WorkNotFound", "Addon manifestWork is not found")),
        (_work(applied=None),
         ("Unknown", "WorkNotApplied", "Addon manifestWork is not applied yet")),
        (_work(applied="False"), ("False", "WorkNotApplied", "some resources are missing")),
        (_work(), ("Unknown", "NoProbeResult", "Probe results are not returned")),
        (_work(("Replicas", 1)), ("False", "ProbeUnavailable",
          "Probe addon unavailable with err readyReplica is not probed")),
        (_work(("ReadyReplicas", 1)), ("False", "ProbeUnavailable",
          "Probe addon unavailable with err desiredNumberReplicas is not probed")),
        (_work(("ReadyReplicas", 0), ("Replicas", 2)), ("False", "ProbeUnavailable",
          "Probe addon unavailable with err desiredNumberReplicas is 2 but readyReplica is 0 for "
          "deployments ns/agent")),
        (_work(("ReadyReplicas", 1), ("Replicas", 2)),
         ("True", "ProbeAvailable", "addon-status add-on is available.")),
    ],
    ids=["no-work", "not-applied", "not-available", "no-feedback", "no-ready-replica",
         "no-replicas", "none-ready", "one-ready"],
)  # fmt: skip
def test_the_health_check_reads_the_agent_s_feedback(
    work: dict[str, Any] | None, expected: tuple[str, str, str]
) -> None:
    assert probe("addon-status", work, [AGENT]) == ("Available", *expected)


def test_a_deployment_that_asks_for_no_replica_is_not_probed() -> None:
    manifests = [
        {"kind": "Deployment", "metadata": {"name": "a", "namespace": "ns"}, "spec": {}},
        {"kind": "Deployment", "metadata": {"name": "b", "namespace": "ns"},
         "spec": {"replicas": 0}},
        {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}},
    ]  # fmt: skip
    assert probed(manifests) == [("ns", "a")]


def test_a_condition_moves_its_time_only_with_its_status_and_nothing_changes_when_all_is_same() -> (
    None
):
    first = set_condition([], ("Available", "True", "ProbeAvailable", "up"), T0)
    assert first == [{"type": "Available", "status": "True", "reason": "ProbeAvailable",
                      "message": "up", "lastTransitionTime": "2026-11-28T12:00:00Z"}]  # fmt: skip
    later = T0 + timedelta(minutes=1)
    assert set_condition(first, ("Available", "True", "ProbeAvailable", "up"), later) == first
    reworded = set_condition(first, ("Available", "True", "Other", "still up"), later)
    assert reworded[0]["lastTransitionTime"] == "2026-11-28T12:00:00Z"
    flipped = set_condition(first, ("Available", "False", "ProbeUnavailable", "down"), later)
    assert flipped[0]["lastTransitionTime"] == "2026-11-28T12:01:00Z"


def test_a_lease_expires_five_lease_durations_after_its_last_renewal() -> None:
    lease = {"spec": {"renewTime": "2026-11-28T12:00:00.000000Z"}}
    assert lease_expires(lease, {"spec": {"leaseDurationSeconds": 60}}) == T0 + timedelta(minutes=5)
    assert lease_expires(lease, {"spec": {"leaseDurationSeconds": 10}}) == T0 + timedelta(
        seconds=50
    )
    assert lease_expires(lease, {"spec": {}}) == T0 + timedelta(minutes=5)  # OCM's default
    assert lease_expires({"spec": {}}, {"spec": {}}) is None
