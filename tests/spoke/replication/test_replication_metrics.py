"""Hub replication's error counter has a series for every kind at zero from the start, so the
first failure of a kind shows in `increase()` and an alert can tell "no errors" from "no data"."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from controller.kube.api import ErrorKind
from controller.spoke.metrics import ReplicationMetrics


def test_every_error_kind_is_exported_at_zero_from_the_start() -> None:
    registry = CollectorRegistry()
    ReplicationMetrics(registry)
    values = {
        kind: registry.get_sample_value("addon_status_hub_errors_total", {"kind": kind.value})
        for kind in ErrorKind
    }
    assert values == dict.fromkeys(ErrorKind, 0.0)
