"""`kubectl get`'s Table in kubesim, as kube-apiserver serves it (apiextensions-apiserver's
tableconvertor for custom resources, the generic convertor for built-ins,
apimachinery's duration.HumanDuration for ages): the real kubectl shows the CRDs'
additionalPrinterColumns of the ObservabilityAddons and of OCM's ManagedClusterAddOns."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator

import pytest

from kubesim import APIServer
from kubesim.table import human_duration, table_version
from tests.hub.hubside import COPY_CRD, MCA_CRD, Hub, seed
from tests.support import KUBECTL

pytestmark = pytest.mark.integration
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


@pytest.fixture
def hub() -> Iterator[Hub]:
    with APIServer([COPY_CRD, MCA_CRD], anonymous=True) as server:
        made = Hub(server)
        for cluster in ("cluster1", "cluster2"):
            made.cluster(cluster)
        made.set_copy("cluster1", seed("Degraded", "ForwardFailure"))
        made.set_addon_conditions("cluster1", [{
            "type": "Available", "status": "True", "reason": "ProbeAvailable", "message": "",
            "lastTransitionTime": "2026-11-27T00:00:00Z"}])  # fmt: skip
        yield made
        made.close()


def kubectl(server: APIServer, *args: str) -> list[list[str]]:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    done = subprocess.run(
        [KUBECTL, "--server", server.url, "--insecure-skip-tls-verify=false", *args],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return [line.split() for line in done.stdout.splitlines()]


def test_kubectl_get_shows_the_managed_cluster_addons_printer_columns(hub: Hub) -> None:
    header, *rows = kubectl(hub.server, "get", "managedclusteraddons", "-A")
    assert header == ["NAMESPACE", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING"]
    assert rows[0] == ["cluster1", "addon-status", "True"]  # no Degraded, no Progressing yet
    assert rows[1] == ["cluster2", "addon-status"]


def test_kubectl_get_shows_the_copies_printer_columns_and_ages(hub: Hub) -> None:
    header, *rows = kubectl(hub.server, "get", "observabilityaddons", "-A")
    assert header[:5] == ["NAMESPACE", "NAME", "AVAILABLE", "DEGRADED", "PROGRESSING"]
    assert header[-1] == "AGE"
    assert rows[0][:5] == ["cluster1", "observability-addon", "False", "True", "False"]
    assert rows[0][-1].endswith("s")  # created a moment ago


def test_the_table_carries_partial_object_metadata_unless_asked_otherwise(hub: Hub) -> None:
    path = "/apis/addon.open-cluster-management.io/v1alpha1/managedclusteraddons"
    request = urllib.request.Request(hub.server.url + path, headers={"Accept": TABLE})
    with urllib.request.urlopen(request, timeout=10) as response:
        answer = json.load(response)
    assert answer["kind"] == "Table" and answer["apiVersion"] == "meta.k8s.io/v1"
    assert [c["name"] for c in answer["columnDefinitions"]][:2] == ["Name", "Available"]
    assert answer["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    assert answer["metadata"]["resourceVersion"]


def test_a_built_in_kind_gets_the_generic_columns(hub: Hub) -> None:
    header, *_ = kubectl(hub.server, "get", "namespaces")
    assert header == ["NAME", "CREATED", "AT"]  # "Created At", as kube-apiserver's default


def test_plain_json_is_served_unless_a_table_comes_first() -> None:
    assert table_version("application/json;as=Table;v=v1;g=meta.k8s.io,application/json") == "v1"
    assert table_version("application/json;as=Table;v=v1beta1;g=meta.k8s.io") == "v1beta1"
    assert table_version("application/json") is None
    assert table_version("application/json;as=Table;v=v2;g=meta.k8s.io,application/json") is None


@pytest.mark.parametrize(
    ("seconds", "written"),
    [(-5, "<invalid>"), (-1, "0s"), (119, "119s"), (150, "2m30s"), (600, "10m"),
     (3 * 3600, "3h"), (8 * 3600 + 60, "8h"), (3 * 86400 + 3600, "3d1h"), (400 * 86400, "400d"),
     (3 * 365 * 86400 + 86400, "3y1d"), (9 * 365 * 86400, "9y")],
)  # fmt: skip
def test_ages_are_written_as_kubectl_writes_them(seconds: int, written: str) -> None:
    assert human_duration(seconds) == written
