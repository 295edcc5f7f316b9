"""The ObservabilityAddon CRD as the shipped observability addon installs it
(`tests/data/upstream/observabilityaddons.crd.yaml`, a copy of stolostron/multicluster-
observability-operator's): kube-apiserver keeps only `status.conditions` with `type`,
`status`, `lastTransitionTime`, `reason` and `message`, all required, and prunes the rest
(structural schema pruning). The acm profile writes to a hub that serves this CRD."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer
from tests.kubesim.conftest import (
    GROUP,
    NAME,
    NAMESPACE,
    PLURAL,
    VERSION,
    addon,
    forwarding_condition,
    status_of,
)
from tests.support import api_client

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_CRD = REPO / "tests" / "data" / "upstream" / "observabilityaddons.crd.yaml"


@pytest.fixture
def upstream() -> Iterator[client.CustomObjectsApi]:
    with APIServer([UPSTREAM_CRD]) as server, api_client(server) as api:
        core = client.CoreV1Api(api)
        core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE)))
        custom = client.CustomObjectsApi(api)
        custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, addon())
        yield custom


def _write_status(custom: client.CustomObjectsApi, status: dict[str, Any]) -> dict[str, Any]:
    written: dict[str, Any] = custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, NAMESPACE, PLURAL, NAME, {"status": status}
    )
    return written


def test_the_upstream_crd_prunes_everything_but_the_five_condition_fields(
    upstream: client.CustomObjectsApi,
) -> None:
    """kube-apiserver's structural pruning: unknown fields of a CRD without
    `x-kubernetes-preserve-unknown-fields` are dropped silently, at every level."""
    written = _write_status(
        upstream,
        {
            "conditions": [forwarding_condition(observedGeneration=3)],
            "collectors": [{"name": "metrics-collector", "state": "Available"}],
            "lastKnownGood": {"generation": 3},
        },
    )
    assert written["status"] == {"conditions": [forwarding_condition()]}


def test_the_upstream_crd_requires_every_condition_field(
    upstream: client.CustomObjectsApi,
) -> None:
    """`required` of the structural schema: 422 Unprocessable Entity naming the field."""
    incomplete = forwarding_condition()
    del incomplete["message"]
    with pytest.raises(client.ApiException) as error:
        _write_status(upstream, {"conditions": [incomplete]})
    assert error.value.status == 422
    causes = status_of(error.value)["details"]["causes"]
    assert [(c["field"], c["reason"]) for c in causes] == [
        ("status.conditions[0].message", "FieldValueRequired")
    ]


def test_the_upstream_crd_keeps_an_empty_message(upstream: client.CustomObjectsApi) -> None:
    """A required string may be empty: `required` asks for the key, not a value."""
    written = _write_status(upstream, {"conditions": [forwarding_condition(message="")]})
    assert written["status"]["conditions"][0]["message"] == ""
