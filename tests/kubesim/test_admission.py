"""ValidatingAdmissionPolicies in kubesim, each case as kube-apiserver's policy plugin answers it
(k8s.io/apiserver/pkg/admission/plugin/policy/validating: dispatcher.go, validator.go): a
binding with `Deny` refuses a matching write with kube-apiserver's words and the validation's
reason and code; matchConditions select the requests a policy looks at; variables feed the
validations; messageExpression, then message, then `failed expression: ...`; failurePolicy
decides a failed evaluation; `Warn` answers with a Warning header; a policy whose expression
does not compile is refused at the door (422). Through the real client over HTTP."""

from __future__ import annotations

import urllib.request
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
TOKENS = {
    "admin": UserInfo("admin", groups=("system:masters",)),
    "agent1": UserInfo("agent1", groups=("agents", "cluster:ns1")),
    "agent2": UserInfo("agent2", groups=("agents", "cluster:ns2")),
}
RULES = [{"apiGroups": [GROUP], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
          "resources": [PLURAL, f"{PLURAL}/status"]}]  # fmt: skip


def policy(**spec: Any) -> dict[str, Any]:
    body = {"matchConstraints": {"resourceRules": RULES},
            "matchConditions": [{"name": "agents", "expression":
                                 "'agents' in request.userInfo.groups"}],
            "variables": [{"name": "own", "expression":
                           "'cluster:' + request.namespace"}],
            "validations": [{"expression": "variables.own in request.userInfo.groups",
                             "messageExpression": "request.userInfo.username + ' may not write "
                             "' + request.namespace", "reason": "Forbidden"}]}  # fmt: skip
    body.update(spec)
    return {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "isolation"}, "spec": body}  # fmt: skip


def binding(actions: list[str]) -> dict[str, Any]:
    return {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "isolation"},
            "spec": {"policyName": "isolation", "validationActions": actions}}  # fmt: skip


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS, namespaces=["default", "ns1", "ns2"]) as srv:
        yield srv


def write_status(server: APIServer, token: str, namespace: str) -> None:
    with api_client(server, token) as api:
        custom = client.CustomObjectsApi(api)
        obj = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
        obj["status"] = {"conditions": []}
        custom.replace_namespaced_custom_object_status(GROUP, VERSION, namespace, PLURAL, NAME, obj)


def install(server: APIServer, *objects: dict[str, Any]) -> None:
    admin = kube_of(server, "admin")
    apply_objects(admin, [addon() | {"metadata": {"name": NAME, "namespace": n}}
                          for n in ("ns1", "ns2")])  # fmt: skip
    apply_objects(admin, list(objects))


def test_deny_refuses_a_matching_write_with_kube_apiservers_words(server: APIServer) -> None:
    install(server, policy(), binding(["Deny"]))
    write_status(server, "agent1", "ns1")
    write_status(server, "admin", "ns2")  # no match condition: not looked at
    with pytest.raises(ApiException) as refused:
        write_status(server, "agent1", "ns2")
    assert refused.value.status == 403
    assert (
        f"{PLURAL}.{GROUP} \\\"{NAME}\\\" is forbidden: ValidatingAdmissionPolicy 'isolation' "
        "with binding 'isolation' denied request: agent1 may not write ns2"
    ) in refused.value.body


def test_the_reason_defaults_to_invalid_and_the_message_falls_back_to_the_expression(
    server: APIServer,
) -> None:
    spec = policy()["spec"]
    validation = {"expression": spec["validations"][0]["expression"]}
    install(server, policy(validations=[validation]), binding(["Deny"]))
    with pytest.raises(ApiException) as refused:
        write_status(server, "agent2", "ns1")
    assert refused.value.status == 422
    assert "denied request: failed expression: variables.own in request.userInfo.groups" in (
        refused.value.body
    )


@pytest.mark.parametrize(("failure", "refused"), [("Fail", True), ("Ignore", False)])
def test_failure_policy_decides_an_expression_that_fails(
    server: APIServer, failure: str, refused: bool
) -> None:
    broken = {"expression": "object.spec.missing == 'x'"}
    install(server, policy(validations=[broken], failurePolicy=failure), binding(["Deny"]))
    if refused:
        with pytest.raises(ApiException) as denied:
            write_status(server, "agent1", "ns1")
        assert "resulted in error" in denied.value.body
    else:
        write_status(server, "agent1", "ns1")


def test_warn_admits_with_a_warning_header(server: APIServer) -> None:
    install(server, policy(), binding(["Warn"]))
    path = f"{server.url}/apis/{GROUP}/{VERSION}/namespaces/ns2/{PLURAL}/{NAME}/status"
    headers = {"Authorization": "Bearer agent1", "Content-Type": "application/merge-patch+json"}
    request = urllib.request.Request(path, b'{"status":{"conditions":[]}}', headers, method="PATCH")
    with urllib.request.urlopen(request, timeout=10) as answer:
        assert answer.status == 200
        warning = answer.headers["Warning"]
    assert warning.startswith('299 - "Validation failed for ValidatingAdmissionPolicy')
    assert "agent1 may not write ns2" in warning


def test_a_policy_that_does_not_compile_is_refused_at_the_door(server: APIServer) -> None:
    with api_client(server, "admin") as api, pytest.raises(ApiException) as refused:
        client.AdmissionregistrationV1Api(api).create_validating_admission_policy(
            policy(validations=[{"expression": "1 +"}])
        )
    assert refused.value.status == 422
    assert "spec.validations[0].expression" in refused.value.body


def test_what_kubesim_does_not_serve_is_refused_naming_the_field(server: APIServer) -> None:
    with api_client(server, "admin") as api, pytest.raises(ApiException) as refused:
        client.AdmissionregistrationV1Api(api).create_validating_admission_policy(
            policy(paramKind={"apiVersion": "v1", "kind": "ConfigMap"})
        )
    assert refused.value.status == 422 and "spec.paramKind" in refused.value.body
