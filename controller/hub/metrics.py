"""The hub side's Prometheus metrics: writes of `ManagedClusterAddOn` status, failed hub calls
by kind, and the clusters by state. Every label value is there from the start at zero, so the
first of each shows in `increase()`."""

from __future__ import annotations

from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge

from controller.hub.mirror import CLUSTER_STATES
from controller.kube.api import ErrorKind

__all__ = ["MirrorMetrics"]


class MirrorMetrics:
    """Writes of `ManagedClusterAddOn` status, failed calls by kind, clusters by state; every
    label value is there from the start at zero, so the first of each shows in `increase()`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.writes = Counter(
            "addon_status_hub_mirror_writes_total",
            "Writes of the standard conditions of a hub copy to its ManagedClusterAddOn.",
            registry=registry,
        )
        self.errors = Counter(
            "addon_status_hub_mirror_errors_total",
            "Failed hub calls of the hub side, by kind (not_found: no ManagedClusterAddOn).",
            ["kind"],
            registry=registry,
        )
        for kind in ErrorKind:
            self.errors.labels(kind=kind.value)
        self.malformed = Counter(
            "addon_status_hub_mirror_malformed_copies",
            "Hub copies holding a condition a ManagedClusterAddOn would refuse (left out of the "
            "mirror, the rest of the copy mirrored), counted when first seen in that shape",
            registry=registry,
        )
        self.clusters = Gauge(
            "addon_status_hub_mirror_clusters",
            "Clusters whose hub copy is watched, by the standard type that is True on it.",
            ["state"],
            registry=registry,
        )
        for state in CLUSTER_STATES:
            self.clusters.labels(state=state)

    def count(self, states: Mapping[str, int]) -> None:
        for state in CLUSTER_STATES:
            self.clusters.labels(state=state).set(states.get(state, 0))
