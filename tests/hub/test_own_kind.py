"""Beside ACM's observability operator (docs/spec.md §12.1): the hub side reads the project's own
kind (`--addon-kind AddonStatus`, manifests/components/own-kind) and writes the console's
`addon-status` ManagedClusterAddOn, on a hub that serves only that kind's CRD of the project's:
ObservabilityAddon, MCO's kind, is neither read nor needed."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from controller.hub.mirror import CLUSTER_LABEL
from controller.kube.api import OWN_ADDON
from kubesim import APIServer
from tests.hub.hubside import CLUSTER_CRD, MCA_CRD, TOKENS, Hub, replica, seed, standard
from tests.own_kind import own_kind_crd
from tests.support import eventually

pytestmark = pytest.mark.integration


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    crds = [own_kind_crd(tmp_path), MCA_CRD, CLUSTER_CRD]
    with APIServer(crds, tokens=TOKENS) as server:
        made = Hub(server, "addon-status")
        try:
            yield made
        finally:
            made.close()


def test_the_component_names_the_kind_the_processes_take(tmp_path: Path) -> None:
    crd = yaml.safe_load(own_kind_crd(tmp_path).read_text())
    assert crd["metadata"]["name"] == f"{OWN_ADDON.plural}.{OWN_ADDON.group}"
    spec = crd["spec"]
    named = (spec["group"], spec["names"]["kind"], spec["versions"][0]["name"])
    assert named == (OWN_ADDON.group, OWN_ADDON.kind, OWN_ADDON.version)


def test_the_own_kinds_copy_is_mirrored_onto_the_addon_status_managed_cluster_addon(
    hub: Hub,
) -> None:
    labels = {CLUSTER_LABEL: "cluster1"}
    hub.core.create_namespace({"metadata": {"name": "cluster1", "labels": labels}})
    hub.create_addon("cluster1")
    body = {"apiVersion": OWN_ADDON.api_version, "kind": OWN_ADDON.kind,
            "metadata": {"name": "addon-status"}, "spec": {}}  # fmt: skip
    g, v, p = OWN_ADDON.group, OWN_ADDON.version, OWN_ADDON.plural
    hub.custom.create_namespaced_custom_object(g, v, "cluster1", p, body)
    copy = hub.custom.get_namespaced_custom_object(g, v, "cluster1", p, "addon-status")
    copy["status"] = {"conditions": seed(true="Degraded", reason="ReportsStale")}
    hub.custom.replace_namespaced_custom_object_status(g, v, "cluster1", p, "addon-status", copy)
    with replica(
        hub, addon_name="addon-status", copy_name="addon-status", addon_kind="AddonStatus"
    ):
        wanted = standard(seed(true="Degraded", reason="ReportsStale"))
        eventually(lambda: hub.conditions("cluster1") == wanted, "the own kind's copy mirrored")
