"""The hub side's Prometheus metrics: writes of `ManagedClusterAddOn` status and failed hub
calls by kind (`MirrorMetrics`); the clusters by state and each cluster's state, computed at
each scrape from the hub copies in memory (`ClusterStates`: counting on every watch event
would cost the whole fleet per event). Every label value is there from the start at zero, so
the first of each shows in `increase()`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry
from prometheus_client import Counter as CounterMetric
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.hub.mirror import CLUSTER_STATES, ClusterState
from controller.hub.path import PATH_REASONS
from controller.kube.api import ErrorKind

__all__ = ["ClusterPaths", "ClusterStates", "MirrorMetrics"]


class MirrorMetrics:
    """Writes of `ManagedClusterAddOn` status and failed calls by kind; every label value is
    there from the start at zero, so the first of each shows in `increase()`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.writes = CounterMetric(
            "addon_status_hub_mirror_writes_total",
            "Writes of the conditions the hub side owns (Degraded, Disabled, NotSupported) to a "
            "ManagedClusterAddOn.",
            registry=registry,
        )
        self.errors = CounterMetric(
            "addon_status_hub_mirror_errors_total",
            "Failed hub calls of the hub side, by kind (not_found: no ManagedClusterAddOn).",
            ["kind"],
            registry=registry,
        )
        for kind in ErrorKind:
            self.errors.labels(kind=kind.value)
        self.conflicts_lost = CounterMetric(
            "addon_status_hub_mirror_conflicts_lost",
            "Writes to a ManagedClusterAddOn refused with 409 because another writer wrote it "
            "first (each followed by one read and at most one write)",
            registry=registry,
        )
        self.repairs = CounterMetric(
            "addon_status_hub_mirror_repairs",
            "Writes that put back a condition the hub side owns after another writer changed it "
            "(one per state of the hub copy)",
            registry=registry,
        )
        self.contested = CounterMetric(
            "addon_status_hub_mirror_contested",
            "ManagedClusterAddOns whose owned conditions another writer changed again after the "
            "repair: left as they are until the hub copy changes",
            registry=registry,
        )
        self.malformed = CounterMetric(
            "addon_status_hub_mirror_malformed_copies",
            "Hub copies holding a condition a ManagedClusterAddOn would refuse (left out of the "
            "mirror, the rest of the copy mirrored), counted when first seen in that shape",
            registry=registry,
        )


class ClusterStates(Collector):
    """Each mirrored cluster's state, read at every scrape (so a cluster whose copy went away,
    or that the selection dropped, has no series left):

    - `addon_status_hub_cluster_state{cluster, type, reason}` 1: one series per cluster, as
      kube-state-metrics labels a state (`kube_pod_status_phase`), so that an alert can name the
      cluster and say why;
    - `addon_status_hub_cluster_state_since_timestamp_seconds{cluster}`: the True condition's
      `lastTransitionTime`, so that "Degraded for 30 minutes" holds across restarts of the hub
      side (a `for:` clause would start over).

    Two series per cluster: 20,000 at 10,000 clusters."""

    def __init__(self, states: Callable[[], Iterable[ClusterState]]) -> None:
        self._states = states

    def collect(self) -> Iterator[GaugeMetricFamily]:
        clusters = list(self._states())
        counted = GaugeMetricFamily(
            "addon_status_hub_mirror_clusters",
            "Clusters whose hub copy is watched, by the standard type that is True on it.",
            labels=["state"],
        )
        tally = Counter(cluster.type for cluster in clusters)
        for name in CLUSTER_STATES:  # every state, at zero too
            counted.add_metric([name], float(tally[name]))
        yield counted
        state = GaugeMetricFamily(
            "addon_status_hub_cluster_state",
            "1 for each mirrored cluster, labelled with the standard type that is True on its hub "
            "copy (Unknown when none is) and that condition's reason",
            labels=["cluster", "type", "reason"],
        )
        since = GaugeMetricFamily(
            "addon_status_hub_cluster_state_since_timestamp_seconds",
            "When the standard type that is True on the cluster's hub copy last changed "
            "(its lastTransitionTime, Unix seconds)",
            labels=["cluster"],
        )
        for cluster in clusters:
            state.add_metric([cluster.cluster, cluster.type, cluster.reason], 1.0)
            if cluster.since is not None:
                since.add_metric([cluster.cluster], cluster.since.timestamp())
        yield state
        yield since


class ClusterPaths(Collector):
    """The clusters whose `Degraded` OCM's view decides (docs/spec.md §12.2), read at every
    scrape:

    - `addon_status_hub_cluster_path{cluster, reason}` 1 for each (the path's reason:
      `ClusterLost`, `AgentUnavailable`, `AgentNotRegistered`, `StatusNotReplicated`); none for
      a cluster whose path holds, so a healthy fleet costs no series;
    - `addon_status_hub_clusters_path{reason}`: how many, every reason at zero too (a hub or
      network outage is one alert on this, not one per cluster)."""

    def __init__(self, paths: Callable[[], dict[str, str]]) -> None:
        self._paths = paths

    def collect(self) -> Iterator[GaugeMetricFamily]:
        paths = self._paths()
        each = GaugeMetricFamily(
            "addon_status_hub_cluster_path",
            "1 for each cluster whose Degraded the path from it decides (not its hub copy), "
            "labelled with the reason",
            labels=["cluster", "reason"],
        )
        for cluster, reason in sorted(paths.items()):
            each.add_metric([cluster, reason], 1.0)
        yield each
        counted = GaugeMetricFamily(
            "addon_status_hub_clusters_path",
            "Clusters whose Degraded the path from them decides, by reason",
            labels=["reason"],
        )
        tally = Counter(paths.values())
        for reason in PATH_REASONS:
            counted.add_metric([reason], float(tally[reason]))
        yield counted
