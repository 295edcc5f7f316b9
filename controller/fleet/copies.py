"""The fleet view's read of the hub, through the seam: every cluster's hub copy of the addon,
listed across all namespaces a page at a time (`--watch` follows them with the one
list-then-watch loop, `controller.kube.reflector`), and which namespaces are clusters (those
OCM's registration labelled `open-cluster-management.io/cluster-name`: a hub that manages itself
keeps its own spoke's copy in a namespace that is no cluster's, docs/spec.md §12).

Pages of 500, as kubectl asks for them (`--chunk-size`), through the pager
(`controller.kube.pager`): each copy is turned into its row as it is decoded and dropped, so a
hub of 20,000 clusters never sits decoded in memory at once; the pages are one consistent list
(the API server's `continue` token), and a chain that never ends is cut.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
from typing import Any, Final

from controller.fleet.paths import Ocm, OcmListing, keep_addon, keep_cluster
from controller.fleet.view import Row, row_of
from controller.hub.ocm import CLUSTER_LABEL, MANAGED_CLUSTER, MANAGED_CLUSTER_ADDON
from controller.kube.api import ADDON, ALL_NAMESPACES, NAMESPACE, ApiResource, Kube, KubeError
from controller.kube.pager import PAGE, list_all
from statemachines.object_names import ADDON_CR

__all__ = [
    "COPY_NAME",
    "PAGE",
    "Listing",
    "list_clusters",
    "list_hub_copies",
    "list_ocm",
    "selected_clusters",
]

COPY_NAME: Final = ADDON_CR  # what every spoke names its hub copy


@dataclass(frozen=True)
class Listing:
    """Every hub copy's row, by cluster, as of `resource_version`; `calls` the list calls made."""

    rows: list[Row]
    resource_version: str
    calls: int


def list_clusters(kube: Kube, *, page: int = PAGE) -> frozenset[str]:
    """The namespaces OCM made for a ManagedCluster. Raises KubeError."""
    return _names(kube, NAMESPACE, CLUSTER_LABEL, page)


def selected_clusters(kube: Kube, selector: str, *, page: int = PAGE) -> frozenset[str]:
    """The ManagedClusters whose labels `selector` picks (`fleet -l env=prod`): how a fleet is
    sliced, by the labels OCM and its users put on clusters. Raises KubeError."""
    return _names(kube, MANAGED_CLUSTER, selector, page)


def _names(kube: Kube, resource: ApiResource, selector: str, page: int) -> frozenset[str]:
    listed = list_all(
        kube, resource, ALL_NAMESPACES, keep=_name, label_selector=selector, page=page
    )
    return frozenset(listed.items)


def list_hub_copies(
    kube: Kube, name: str = COPY_NAME, *, page: int = PAGE, kind: ApiResource = ADDON
) -> Listing:
    """Every hub copy (the `ObservabilityAddon` called `name` in every namespace); objects of
    other names (which anyone allowed to create one could add) are no cluster's. Raises
    KubeError."""
    # Decoding allocates many containers, none in a cycle: the collector's passes over them
    # (half the decode time or more, measured) find nothing, so it waits.
    collecting = gc.isenabled()
    gc.disable()
    try:
        listed = list_all(
            kube, kind, ALL_NAMESPACES, field_selector=f"metadata.name={name}", page=page,
            keep=lambda item: row_of(item) if _name(item) == name else None,
        )  # fmt: skip
    finally:
        if collecting:
            gc.enable()
    rows = sorted(listed.items, key=lambda r: (r.cluster, r.name))
    return Listing(rows, listed.resource_version, listed.pages)


def _name(item: dict[str, Any]) -> str | None:
    meta = item.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) else None


def list_ocm(kube: Kube, addon: str, agent_addon: str = "") -> OcmListing:
    """OCM's word on every cluster (docs/spec.md §12.2). A hub that serves no OCM kind, or
    forbids reading it, leaves the copies' word alone: `problem` says why."""
    agent_addon = agent_addon or addon
    try:
        verdicts = _addons(kube, addon)
        agents = verdicts if agent_addon == addon else _addons(kube, agent_addon)
        clusters = list_all(kube, MANAGED_CLUSTER, ALL_NAMESPACES, keep=keep_cluster).items
    except KubeError as error:
        return OcmListing(
            {}, {}, {}, f"OCM's view not read ({error.detail}): states are the copies'"
        )
    return OcmListing(verdicts, agents, dict(clusters))


def _addons(kube: Kube, name: str) -> dict[str, Ocm]:
    listed = list_all(
        kube, MANAGED_CLUSTER_ADDON, ALL_NAMESPACES, keep=keep_addon,
        field_selector=f"metadata.name={name}",
    )  # fmt: skip
    return dict(listed.items)
