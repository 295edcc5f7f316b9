"""Which writes a ValidatingAdmissionPolicy looks at, as kube-apiserver decides it: its rules
match as the webhook rules' matcher does (admission/plugin/webhook/predicates/rules: `*` is
every resource but no subresource, `*/*` every resource and subresource; a Namespace is
cluster-scoped), and policies and bindings are never judged by policies (policy/generic:
admission configuration resources are skipped), so a deny-all policy can still be deleted.
Through the real client over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import CRD, GROUP, NAME, PLURAL, VERSION, addon
from tests.support import api_client, apply_objects, kube_of

pytestmark = pytest.mark.integration
ADMISSION = "admissionregistration.k8s.io"
TOKENS = {"admin": UserInfo("admin", groups=("system:masters",))}


def deny_all(resources: list[str], scope: str = "*") -> list[dict[str, Any]]:
    rule = {"apiGroups": ["*"], "apiVersions": ["*"], "operations": ["*"],
            "resources": resources, "scope": scope}  # fmt: skip
    policy = {
        "apiVersion": f"{ADMISSION}/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "deny-all"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [rule]},
            "validations": [{"expression": "false", "message": "no writes"}],
        },
    }
    binding = {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "deny-all"},
               "spec": {"policyName": "deny-all", "validationActions": ["Deny"]}}  # fmt: skip
    return [policy, binding]


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS, namespaces=["default", "ns1"]) as srv:
        yield srv


@pytest.fixture
def custom(server: APIServer) -> Iterator[client.CustomObjectsApi]:
    with api_client(server, "admin") as api:
        yield client.CustomObjectsApi(api)


def refused(write: Any) -> bool:
    try:
        write()
    except ApiException as error:
        assert error.status == 422 and "denied request: no writes" in error.body
        return True
    return False


def install(server: APIServer, *objects: dict[str, Any]) -> None:
    apply_objects(kube_of(server, "admin"), list(objects))


@pytest.mark.parametrize(
    ("resources", "object_refused", "status_refused"),
    [(["*"], True, False), (["*/*"], True, True), ([f"{PLURAL}/*"], True, True),
     (["*/status"], False, True), ([PLURAL], True, False)],
)  # fmt: skip
def test_wildcards_in_resources_match_as_kube_apiservers_matcher(
    server: APIServer,
    custom: client.CustomObjectsApi,
    resources: list[str],
    object_refused: bool,
    status_refused: bool,
) -> None:
    install(server, addon() | {"metadata": {"name": NAME, "namespace": "ns1"}})
    install(server, *deny_all(resources))
    assert (
        refused(
            lambda: custom.patch_namespaced_custom_object(
                GROUP, VERSION, "ns1", PLURAL, NAME, {"metadata": {"labels": {"a": "b"}}}
            )
        )
        is object_refused
    )
    assert (
        refused(
            lambda: custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, "ns1", PLURAL, NAME, {"status": {"conditions": []}}
            )
        )
        is status_refused
    )


@pytest.mark.parametrize(("scope", "namespace_refused"), [("Cluster", True), ("Namespaced", False)])
def test_a_namespace_is_cluster_scoped_to_the_rules(
    server: APIServer, scope: str, namespace_refused: bool
) -> None:
    install(server, *deny_all(["namespaces"], scope))
    with api_client(server, "admin") as api:
        core = client.CoreV1Api(api)
        assert (
            refused(lambda: core.patch_namespace("ns1", {"metadata": {"labels": {"a": "b"}}}))
            is namespace_refused
        )


def test_a_deny_all_policy_does_not_judge_policies_and_can_be_deleted(server: APIServer) -> None:
    install(server, *deny_all(["*"]))
    with api_client(server, "admin") as api:
        admission = client.AdmissionregistrationV1Api(api)
        assert refused(lambda: client.CoreV1Api(api).create_namespace({"metadata": {"name": "x"}}))
        admission.delete_validating_admission_policy_binding("deny-all")
        admission.delete_validating_admission_policy("deny-all")
        client.CoreV1Api(api).create_namespace({"metadata": {"name": "x"}})
