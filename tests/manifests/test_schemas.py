"""Every object of every kustomization, validated offline against the Kubernetes API schemas by
kubernetes-validate in strict mode (an unknown or misspelt field fails), for the oldest
Kubernetes this project supports (1.33) and the newest the validator ships. Objects of other
projects' CRDs have no Kubernetes schema: Open Cluster Management's are checked against their
CRDs (tests/data/upstream, byte for byte) as kube-apiserver does it, by kubesim's CRD strategy
(a field the schema would prune fails too); the ServiceMonitor against a schema of its own
(schemas/); any other such kind fails until it gets one."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Final

import jsonschema
import kubernetes_validate
import pytest
from kubernetes_validate.utils import SchemaNotFoundError, latest_version

from kubesim import load_crds
from tests.manifests.kustomize import ROOT, build, find, identity, kustomization_roots

Obj = dict[str, Any]
SCHEMAS: Final = Path(__file__).parent / "schemas"
OLDEST: Final = "1.33"
VERSIONS: Final = (OLDEST, latest_version())
OWN_SCHEMAS: Final = {
    ("monitoring.coreos.com/v1", "ServiceMonitor"): SCHEMAS
    / "servicemonitor.monitoring.coreos.com-v1.json",
    ("monitoring.coreos.com/v1", "PrometheusRule"): SCHEMAS
    / "prometheusrule.monitoring.coreos.com-v1.json",
}


CRD_FILES: Final = [
    *sorted((ROOT / "tests" / "data" / "upstream").glob("*.crd.yaml")),
    ROOT
    / "tests"
    / "data"
    / "crds"
    / "managedclustersetbindings.cluster.open-cluster-management.io.yaml",
]
SERVED_BY_CRDS: Final = {
    (f"{rt.group}/{version}", rt.kind): (rt, version)
    for rt in load_crds(CRD_FILES)
    for version in rt.versions
}


def _objects() -> dict[str, Obj]:
    found: dict[str, Obj] = {}
    for root in kustomization_roots():
        for obj in build(root).objects:
            found["/".join(filter(None, identity(obj)[1:]))] = obj
    return found


OBJECTS: Final = _objects()


def validate(obj: Obj, version: str) -> None:
    """Raises on the first problem; SchemaNotFoundError for a kind nobody has a schema for."""
    served = SERVED_BY_CRDS.get((obj["apiVersion"], obj["kind"]))
    if served is not None:
        resource, api_version = served
        stored, pruned = resource.strategy.decode(copy.deepcopy(obj), api_version)
        errors = resource.strategy.validate(stored, api_version)
        assert (pruned, [str(e) for e in errors]) == ([], []), identity(obj)
        return
    own = OWN_SCHEMAS.get((obj["apiVersion"], obj["kind"]))
    if own is None:
        kubernetes_validate.validate(obj, version, strict=True)
        return
    schema = json.loads(own.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(obj)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("key", sorted(OBJECTS))
def test_every_object_validates_strictly(key: str, version: str) -> None:
    validate(OBJECTS[key], version)


def test_the_oldest_supported_version_is_one_the_validator_ships() -> None:
    shipped = {v.rsplit(".", 1)[0] for v in kubernetes_validate.utils.all_versions()}
    assert OLDEST in shipped


def _deployment() -> Obj:
    return copy.deepcopy(find(OBJECTS.values(), "Deployment", "addon-status-controller"))


def _service_monitor() -> Obj:
    return copy.deepcopy(find(OBJECTS.values(), "ServiceMonitor"))


def _unknown_container_field(obj: Obj) -> None:
    obj["spec"]["template"]["spec"]["containers"][0]["securityContex"] = {}


def _replicas_as_text(obj: Obj) -> None:
    obj["spec"]["replicas"] = "2"


def _unknown_endpoint_field(obj: Obj) -> None:
    obj["spec"]["endpoints"][0]["intervall"] = "30s"


def _interval_in_words(obj: Obj) -> None:
    obj["spec"]["endpoints"][0]["interval"] = "30 seconds"


def _no_selector(obj: Obj) -> None:
    del obj["spec"]["selector"]


@pytest.mark.parametrize(
    ("make", "spoil"),
    [
        pytest.param(_deployment, _unknown_container_field, id="misspelt-field"),
        pytest.param(_deployment, _replicas_as_text, id="wrong-type"),
        pytest.param(_service_monitor, _unknown_endpoint_field, id="servicemonitor-unknown"),
        pytest.param(_service_monitor, _interval_in_words, id="servicemonitor-interval"),
        pytest.param(_service_monitor, _no_selector, id="servicemonitor-selector-required"),
    ],
)
def test_a_spoiled_object_fails_validation(make: Any, spoil: Any) -> None:
    obj = make()
    validate(obj, OLDEST)
    spoil(obj)
    with pytest.raises(jsonschema.ValidationError):
        validate(obj, OLDEST)


def _addon() -> Obj:
    return copy.deepcopy(find(OBJECTS.values(), "ClusterManagementAddOn"))


def _template() -> Obj:
    return copy.deepcopy(find(OBJECTS.values(), "AddOnTemplate", "addon-status"))


def _unknown_install_strategy_field(obj: Obj) -> None:
    obj["spec"]["installStrategy"]["placement"] = obj["spec"]["installStrategy"].pop("placements")


def _bad_registration_type(obj: Obj) -> None:
    obj["spec"]["registration"][0]["type"] = "Token"


@pytest.mark.parametrize(
    ("make", "spoil"),
    [
        pytest.param(_addon, _unknown_install_strategy_field, id="crd-pruned-field"),
        pytest.param(_template, _bad_registration_type, id="crd-enum"),
    ],
)
def test_a_spoiled_custom_resource_fails_as_kube_apiserver_would(make: Any, spoil: Any) -> None:
    obj = make()
    validate(obj, OLDEST)
    spoil(obj)
    with pytest.raises(AssertionError):
        validate(obj, OLDEST)


def test_a_kind_without_any_schema_fails_instead_of_passing_unchecked() -> None:
    stranger = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    with pytest.raises(SchemaNotFoundError):
        validate(stranger, OLDEST)
