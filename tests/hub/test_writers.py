"""Another writer of a hub copy's status, read from its managedFields (controller/hub/writers.py,
docs/spec.md §12.1): told once, said in the Degraded the hub side owns, held between the other
writer's writes, never fought. The managedFields below are kube-apiserver 1.36's, as read from
the MCO harness's hub (ACM's endpoint operator's status reconciler beside the project's agent)."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime, timedelta

import pytest

from controller.hub.writers import ANOTHER_WRITER, Writers, degraded_by
from controller.kube.listing import decode_object
from controller.kube.managers import other_status_writers
from tests.hub.hubside import cond

NOW = datetime(2026, 11, 29, 0, 40, tzinfo=UTC)
APPLIED = {"apiVersion": "observability.open-cluster-management.io/v1beta1",
           "fieldsType": "FieldsV1", "manager": "kubectl-client-side-apply",
           "operation": "Update", "time": "2026-11-28T17:00:42Z",
           "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:owner": {}}},
                        "f:spec": {".": {}, "f:enableMetrics": {}}}}  # fmt: skip
MCO = {"apiVersion": "observability.open-cluster-management.io/v1beta1",
       "fieldsType": "FieldsV1", "manager": "mco-endpoint-status-harness",
       "operation": "Update", "subresource": "status", "time": "2026-11-29T00:38:47Z",
       "fieldsV1": {"f:status": {".": {}, "f:conditions": {}}}}  # fmt: skip
OURS = {**MCO, "manager": "addon-status"}


def test_only_a_status_writer_other_than_the_project_counts() -> None:
    assert other_status_writers([APPLIED, OURS]) == ()  # kubectl wrote the spec, not the status
    assert other_status_writers([APPLIED, MCO]) == ("mco-endpoint-status-harness",)
    # an edit of the main resource that holds the status (no status subresource) counts too
    edit = {**APPLIED, "manager": "kubectl-edit", "fieldsV1": {"f:status": {}}}
    assert other_status_writers([edit, OURS]) == ("kubectl-edit",)
    assert other_status_writers(None) == () and other_status_writers("junk") == ()
    # a writer gone since keeps the fields it set that no one changed: old entries do not count
    assert other_status_writers([APPLIED, MCO], since="2026-11-29T00:38:47Z") == (
        "mco-endpoint-status-harness",
    )
    assert other_status_writers([APPLIED, MCO], since="2026-11-29T00:48:48Z") == ()


def test_a_conditions_reader_keeps_who_wrote_not_what() -> None:
    """The hub side's informers decode a copy's conditions only: of managedFields, the managers,
    operations and subresources, and whether an entry holds the status."""
    raw = (
        b'{"metadata":{"name":"observability-addon","managedFields":'
        + json.dumps([APPLIED, MCO]).encode()
        + b'},"status":{"conditions":[]}}'
    )
    kept = decode_object(raw, "conditions")
    assert kept["metadata"]["managedFields"] == [
        {"manager": "kubectl-client-side-apply", "operation": "Update",
         "time": "2026-11-28T17:00:42Z"},
        {"manager": "mco-endpoint-status-harness", "operation": "Update",
         "subresource": "status", "time": "2026-11-29T00:38:47Z", "fieldsV1": {"f:status": {}}},
    ]  # fmt: skip
    assert other_status_writers(kept["metadata"]["managedFields"]) == (
        "mco-endpoint-status-harness",
    )


def test_another_writer_is_told_once_and_held_between_its_writes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    writers = Writers("observability-addon", hold=timedelta(minutes=10))
    with caplog.at_level(logging.INFO, logger="controller.hub.writers"):
        assert writers.held("cluster1", ("mco",), NOW) == ("mco",)
        assert writers.held("cluster1", ("mco",), NOW + timedelta(minutes=5)) == ("mco",)
        # the agent wrote the copy back: the entry is gone, the writer still counts
        assert writers.held("cluster1", (), NOW + timedelta(minutes=14)) == ("mco",)
        assert writers.held("cluster1", (), NOW + timedelta(minutes=15)) == ()
        assert writers.held("cluster2", (), NOW) == ()
    told = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(told) == 1 and "mco" in told[0].getMessage()
    assert [r for r in caplog.records if "no other writer" in r.getMessage()]


def test_the_degraded_said_keeps_its_transition_while_it_holds() -> None:
    copy = [cond("Available", "True", "ForwardSuccessful"),
            cond("Degraded", "False", "ForwardSuccessful")]  # fmt: skip
    said = degraded_by(("mco",), copy, "observability-addon", NOW)
    degraded = [c for c in said if c["type"] == "Degraded"]
    assert len(degraded) == 1 and degraded[0]["status"] == "True"
    assert degraded[0]["reason"] == ANOTHER_WRITER and "mco" in degraded[0]["message"]
    assert degraded[0]["lastTransitionTime"] == "2026-11-29T00:40:00Z"
    again = degraded_by(("mco",), said, "observability-addon", NOW + timedelta(minutes=1))
    assert [c for c in again if c["type"] == "Degraded"] == degraded


def test_the_spoke_leaves_another_writers_status_write_and_takes_its_own() -> None:
    """The spoke's CR watch (controller/spoke/watches.py): a status-only write whose newest
    managedFields entry is another manager's is not handed to the worker (not written back);
    the project's own writes, spec changes and metadata edits are."""
    from controller.spoke.watches import _another_status_write

    stale = {"conditions": [cond("Degraded", "True", "ReportsStale")]}
    forwarding = {"conditions": [cond("Available", "True", "ForwardSuccessful")]}
    old = {"metadata": {"generation": 1, "managedFields": [APPLIED, OURS]},
           "spec": {}, "status": stale}  # fmt: skip
    # the CR's conditions are a list map (MCO's CRD): both keep an entry, of the same second
    mco_wrote = {**old, "metadata": {"generation": 1, "managedFields": [APPLIED, OURS, MCO]},
                 "status": forwarding}  # fmt: skip
    assert _another_status_write(old, mco_wrote) == "mco-endpoint-status-harness"
    later = {**OURS, "time": "2026-11-29T00:38:48Z"}
    ours_again = {**mco_wrote, "metadata": {"generation": 1, "managedFields": [APPLIED, later]},
                  "status": old["status"]}  # fmt: skip
    assert _another_status_write(mco_wrote, ours_again) is None
    edited = {**mco_wrote, "metadata": {"generation": 2, "managedFields": [APPLIED, MCO]},
              "spec": {"enableMetrics": False}}  # fmt: skip
    assert _another_status_write(mco_wrote, edited) is None


def test_a_write_that_takes_fields_from_the_projects_entry_is_the_other_writers() -> None:
    """kube-apiserver moves the fields another manager's write changed out of the project's
    entry (seen on the harness: `addon-status`'s field set shrinks, its time stays)."""
    from controller.spoke.watches import _another_status_write

    ours = {**OURS, "fieldsV1": {"f:status": {"f:conditions": {"k:Available": {}, "k:A": {}}}}}
    shrunk = {**OURS, "fieldsV1": {"f:status": {"f:conditions": {"k:A": {}}}}}
    old = {"metadata": {"generation": 1, "managedFields": [APPLIED, ours]}, "spec": {},
           "status": {"conditions": [cond("Available", "False", "ReportsStale")]}}  # fmt: skip
    new = {**old, "metadata": {"generation": 1, "managedFields": [APPLIED, shrunk, MCO]},
           "status": {"conditions": [cond("Available", "True", "ForwardSuccessful")]}}  # fmt: skip
    assert _another_status_write(old, new) == "mco-endpoint-status-harness"
