"""Open Cluster Management's names the hub side and the fleet view read (docs/spec.md §12): no
rules here, and nothing that loads the core (the fleet view starts without it)."""

from __future__ import annotations

from typing import Final

from controller.kube.api import ApiResource

__all__ = ["CLUSTER_LABEL", "MANAGED_CLUSTER", "MANAGED_CLUSTER_ADDON"]

MANAGED_CLUSTER_ADDON: Final = ApiResource(
    "addon.open-cluster-management.io", "v1alpha1", "managedclusteraddons", "ManagedClusterAddOn"
)
MANAGED_CLUSTER: Final = ApiResource(
    "cluster.open-cluster-management.io",
    "v1",
    "managedclusters",
    "ManagedCluster",
    namespaced=False,
)
CLUSTER_LABEL: Final = "open-cluster-management.io/cluster-name"
"""OCM's registration labels the namespace of each ManagedCluster with it: what a cluster is (a
hub that manages itself keeps its own spoke's addon CR in a namespace without it)."""
