"""ValidatingAdmissionPolicies and bindings as kube-apiserver stores them
(pkg/apis/admissionregistration/validation, and encoding/json into their Go types): a list
where a string goes or a string where an object goes is a 400 in encoding/json's words; an
expression that does not evaluate to the type it must (a validation bool, a messageExpression
string) is a 422 `must evaluate to bool but got int`; a malformed policy another writer put in
storage acts on nothing and breaks no later write; compiled expressions are cached boundedly.
Through the real client over HTTP."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer, UserInfo
from kubesim.admission_kinds import compiled
from tests.kubesim.conftest import CRD
from tests.support import api_client

pytestmark = pytest.mark.integration
ADMISSION = "admissionregistration.k8s.io"
TOKENS = {"admin": UserInfo("admin", groups=("system:masters",))}
RULES = [{"apiGroups": [""], "apiVersions": ["*"], "operations": ["*"], "resources": ["*"]}]


def policy(**spec: Any) -> dict[str, Any]:
    body = {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": RULES},
            "validations": [{"expression": "true"}], **spec}  # fmt: skip
    return {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "p"}, "spec": body}  # fmt: skip


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS) as srv:
        yield srv


def refusal(server: APIServer, path: str, body: dict[str, Any]) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    connection.request(
        "POST",
        path,
        json.dumps(body),
        {"Authorization": "Bearer admin", "Content-Type": "application/json"},
    )
    reply = connection.getresponse()
    answer = json.loads(reply.read())
    connection.close()
    return reply.status, answer.get("message", "")


POLICIES = f"/apis/{ADMISSION}/v1/validatingadmissionpolicies"
BINDINGS = f"/apis/{ADMISSION}/v1/validatingadmissionpolicybindings"


def test_a_list_where_a_string_goes_is_encoding_jsons_400(server: APIServer) -> None:
    binding = {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "b"},
               "spec": {"policyName": ["p"], "validationActions": ["Deny"]}}  # fmt: skip
    assert refusal(server, BINDINGS, binding) == (
        400,
        (
            'ValidatingAdmissionPolicyBinding in version "v1" cannot be handled as a '
            "ValidatingAdmissionPolicyBinding: json: cannot unmarshal array into Go struct field "
            "ValidatingAdmissionPolicyBindingSpec.spec.policyName of type string"
        ),
    )


def test_a_string_where_an_object_goes_is_a_400(server: APIServer) -> None:
    status, message = refusal(server, POLICIES, policy(matchConstraints="everything"))
    assert status == 400
    assert message.endswith("json: cannot unmarshal string into Go struct field "
                            "ValidatingAdmissionPolicySpec.spec.matchConstraints of type "
                            "v1.MatchResources")  # fmt: skip


@pytest.mark.parametrize(
    ("validation", "field", "why"),
    [({"expression": "1"}, "expression", "must evaluate to bool but got int"),
     ({"expression": "true", "messageExpression": "[1]"}, "messageExpression",
      "must evaluate to string but got list(int)")],
)  # fmt: skip
def test_an_expression_of_the_wrong_type_is_a_422(
    server: APIServer, validation: dict[str, str], field: str, why: str
) -> None:
    status, message = refusal(server, POLICIES, policy(validations=[validation]))
    assert status == 422
    assert f"spec.validations[0].{field}: Invalid value: " in message and why in message


def test_a_malformed_policy_in_storage_breaks_no_later_write(server: APIServer) -> None:
    server.put_object(
        ADMISSION,
        "v1",
        "validatingadmissionpolicies",
        policy(validations="not a list") | {"metadata": {"name": "p"}},
    )
    server.put_object(ADMISSION, "v1", "validatingadmissionpolicybindings",
                      {"kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
                       "spec": {"policyName": ["p"], "validationActions": "Deny"}})  # fmt: skip
    with api_client(server, "admin") as api:
        client.CoreV1Api(api).create_namespace({"metadata": {"name": "after"}})


def test_compiled_expressions_are_cached_boundedly() -> None:
    limit = compiled.cache_info().maxsize
    assert limit is not None
    for index in range(limit + 10):
        compiled(f"{index} > 0")
    assert compiled.cache_info().currsize <= limit


def test_variables_are_typed_by_their_expressions(server: APIServer) -> None:
    """kube-apiserver's composition declares each variable with the type its expression returns
    (and only those before it, to a variable): a bool variable is a validation by itself, a
    string variable plus an int does not compile, and a variable cannot name a later one."""
    variables = [{"name": "name", "expression": "'x'"},
                 {"name": "short", "expression": "size(variables.name) < 3"}]  # fmt: skip
    ok = policy(variables=variables, validations=[{"expression": "variables.short"}])
    assert refusal(server, POLICIES, ok)[0] == 201
    wrong = policy(variables=variables, validations=[{"expression": "variables.name + 1 > 0"}])
    wrong["metadata"]["name"] = "wrong"
    status, message = refusal(server, POLICIES, wrong)
    assert status == 422
    assert "spec.validations[0].expression" in message and "no matching overload" in message
    later = policy(variables=[{"name": "a", "expression": "variables.b"}, *variables])
    later["metadata"]["name"] = "later"
    status, message = refusal(server, POLICIES, later)
    assert status == 422 and "spec.variables[0].expression" in message


def test_a_variables_name_must_be_a_cel_identifier(server: APIServer) -> None:
    status, message = refusal(
        server, POLICIES, policy(variables=[{"name": "not-an-identifier", "expression": "1"}])
    )
    assert (status, "spec.variables[0].name: Invalid value: \"not-an-identifier\": must be a "
                    "valid CEL identifier" in message) == (422, True)  # fmt: skip


def test_a_policy_and_a_binding_are_stored_with_admissionregistration_v1s_defaults(
    server: APIServer,
) -> None:
    """kube-apiserver stores what pkg/apis/admissionregistration/v1/defaults.go fills in:
    failurePolicy Fail, and in match resources matchPolicy Equivalent, namespaceSelector and
    objectSelector {}, each rule's scope "*" (a manifest without them is patched by every
    `kubectl apply`)."""
    api = client.CustomObjectsApi(api_client(server, token="admin"))
    body = policy()
    del body["spec"]["failurePolicy"]
    stored = api.create_cluster_custom_object(ADMISSION, "v1", "validatingadmissionpolicies", body)
    assert stored["spec"]["failurePolicy"] == "Fail"
    assert stored["spec"]["matchConstraints"] == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
        "resourceRules": [{**RULES[0], "scope": "*"}],
    }  # fmt: skip
    binding = {"apiVersion": f"{ADMISSION}/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "b"},
               "spec": {"policyName": "p", "validationActions": ["Deny"],
                        "matchResources": {}}}  # fmt: skip
    stored = api.create_cluster_custom_object(
        ADMISSION, "v1", "validatingadmissionpolicybindings", binding
    )
    assert stored["spec"]["matchResources"] == {
        "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
    }  # fmt: skip
