"""ValidatingAdmissionPolicies within kube-apiserver's CEL cost limits
(k8s.io/apiserver/pkg/apis/cel/config.go: 1,000,000 per call, 10,000,000 per binding, 2,500,000
for the matchConditions; cel-go interpreter/runtimecost.go; admission/plugin/cel/activation.go
and composition.go; policy/validating/validator.go): a doubling is refused before it grows, with
kube-apiserver's errors, decided by failurePolicy (Fail: 422 Invalid; Ignore: admitted); what
kube-apiserver accepts (a comprehension of 10,000 iterations, a list doubled 40 times, which
cel-go concatenates lazily) is accepted; and another client's writes go through while a costly
admission runs. Through the real client over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import CRD
from tests.kubesim.meanwhile import others_first
from tests.support import api_client

pytestmark = pytest.mark.integration
ADMISSION = "admissionregistration.k8s.io"
TOKENS = {"admin": UserInfo("admin", groups=("system:masters",))}
RULES = [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
          "resources": ["configmaps"]}]  # fmt: skip
PER_CALL = "operation cancelled: actual cost limit exceeded"
OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
# `variables.s.contains(variables.s)` over 9,700 characters costs 970 * 970 (cel-go: a tenth of
# each string's length, multiplied) and 4 for the selections: 940,904, under the per-call limit
COSTLY = {"name": "s", "expression": "'" + "x" * 9700 + "'"}
LONG = "'" + "x" * 9700 + "'"
CONDITIONS = [{"name": f"m{i}", "expression": f"{LONG}.contains({LONG})"} for i in range(3)]
HUNDRED = {"name": "n", "expression": repr(list(range(100)))}


def costly(count: int) -> list[dict[str, str]]:
    return [COSTLY] + [{"name": f"c{i}", "expression": "variables.s.contains(variables.s)"}
                       for i in range(count)]  # fmt: skip


def doubling(seed: str, depth: int) -> list[dict[str, str]]:
    return [{"name": "v0", "expression": seed}] + [
        {"name": f"v{i}", "expression": f"variables.v{i - 1} + variables.v{i - 1}"}
        for i in range(1, depth + 1)
    ]


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS) as srv:
        yield srv


@pytest.fixture
def api(server: APIServer) -> Iterator[client.ApiClient]:
    with api_client(server, "admin") as api:
        yield api


def install(api: client.ApiClient, failure: str = "Fail", **spec: Any) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    admission.create_validating_admission_policy(
        {
            "apiVersion": f"{ADMISSION}/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "costly"},
            "spec": {
                "failurePolicy": failure,
                "matchConstraints": {"resourceRules": RULES},
                **spec,
            },
        }
    )
    admission.create_validating_admission_policy_binding(
        {
            "apiVersion": f"{ADMISSION}/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "costly"},
            "spec": {"policyName": "costly", "validationActions": ["Deny"]},
        }
    )


def create(api: client.ApiClient, name: str = "cm") -> None:
    client.CoreV1Api(api).create_namespaced_config_map("default", {"metadata": {"name": name}})


def refusal(api: client.ApiClient) -> tuple[int, str, str]:
    with pytest.raises(ApiException) as refused:
        create(api)
    body = json.loads(refused.value.body)
    prefix = "configmaps \"cm\" is forbidden: ValidatingAdmissionPolicy 'costly' with binding " \
             "'costly' denied request: "  # fmt: skip
    assert body["message"].startswith(prefix)
    return refused.value.status, body["reason"], body["message"].removeprefix(prefix)


def test_a_doubling_chain_of_variables_is_refused_at_the_per_call_limit(
    api: client.ApiClient,
) -> None:
    """Forty variables each doubling the last (ten characters to ten terabytes): cel-go charges
    each string concatenation a tenth of its size, so `v20` (10 * 2**20 characters) is over the
    per-call limit; every variable after it, and the validation, fail with its error."""
    install(api, variables=doubling("'0123456789'", 40),
            validations=[{"expression": "size(variables.v40) > 0"}])  # fmt: skip
    status, reason, message = refusal(api)
    assert (status, reason) == (422, "Invalid")
    nested = "".join(f'composited variable "v{i}" fails to evaluate: ' for i in range(40, 19, -1))
    assert message == f"expression 'size(variables.v40) > 0' resulted in error: {nested}{PER_CALL}"


def test_failure_policy_ignore_admits_past_the_per_call_limit(api: client.ApiClient) -> None:
    install(api, "Ignore", variables=doubling("'0123456789'", 40),
            validations=[{"expression": "size(variables.v40) > 0"}])  # fmt: skip
    create(api)


def test_one_expression_over_the_per_call_limit_resulted_in_error(api: client.ApiClient) -> None:
    """A million iterations (cel-go charges each its identifiers and calls) stop at the limit;
    the next validation still runs, and its denial does not come first."""
    nested = "variables.n.all(a, variables.n.all(b, variables.n.all(c, a + b + c >= 0)))"
    second = {"expression": "false", "message": "second"}
    install(api, variables=[HUNDRED], validations=[{"expression": nested}, second])
    assert refusal(api) == (422, "Invalid", f"expression '{nested}' resulted in error: {PER_CALL}")


def test_a_comprehension_kube_apiserver_accepts_is_accepted(api: client.ApiClient) -> None:
    """10,100 iterations cost about 60,000 in cel-go: under every limit. cel-cpp's own iteration
    budget refused them (`INTERNAL: Iteration budget exceeded`)."""
    pairs = "variables.n.all(a, variables.n.all(b, a + b >= 0))"
    install(api, variables=[HUNDRED], validations=[{"expression": pairs}])
    create(api)


def test_a_list_doubled_forty_times_costs_what_cel_go_charges(api: client.ApiClient) -> None:
    """cel-go concatenates lists lazily, at a cost of 1: a list of 2**40 elements is cheap to
    build and to size, and only reading it through costs its size."""
    install(api, variables=doubling("[1]", 40),
            validations=[{"expression": "size(variables.v40) == 1099511627776"},
                         {"expression": "variables.v40[1099511627775] == 1"}])  # fmt: skip
    create(api)


@pytest.mark.parametrize("failure", ["Fail", "Ignore"])
def test_variables_read_by_one_validation_can_exhaust_the_bindings_budget(
    api: client.ApiClient, failure: str
) -> None:
    """Eleven variables of 940,904 each, all read by one validation: each is under the per-call
    limit, together over the binding's 10,000,000, charged to the validation that read them."""
    reads = " && ".join(f"variables.c{i}" for i in range(11))
    install(api, failure, variables=costly(11), validations=[{"expression": reads}])
    if failure == "Ignore":
        create(api)
    else:
        assert refusal(api) == (422, "Invalid", OUT_OF_BUDGET)


def test_match_conditions_have_their_own_smaller_budget(api: client.ApiClient) -> None:
    """Three conditions of 940,900 each are over the match conditions' 2,500,000 (the
    validations' 10,000,000 would hold them). A condition sees no variables: kube-apiserver
    compiles it without them at create."""
    install(api, matchConditions=CONDITIONS, validations=[{"expression": "true"}])
    assert refusal(api) == (422, "Invalid", OUT_OF_BUDGET)


def test_match_conditions_out_of_budget_with_ignore_do_not_match(api: client.ApiClient) -> None:
    install(api, "Ignore", matchConditions=CONDITIONS, validations=[{"expression": "false"}])
    create(api)


def test_a_match_condition_cannot_name_a_variable(api: client.ApiClient) -> None:
    condition = {"name": "m", "expression": "variables.c0"}
    with pytest.raises(ApiException) as refused:
        install(api, variables=costly(1), matchConditions=[condition],
                validations=[{"expression": "true"}])  # fmt: skip
    assert refused.value.status == 422
    assert "spec.matchConditions[0].expression" in json.loads(refused.value.body)["message"]


def test_message_expressions_spend_what_the_validations_left(api: client.ApiClient) -> None:
    """Ten validations of 940,904 leave 590,960; the messages evaluate the variables again (a
    context of their own): the first is over what is left, which fails every validation, even
    one that held (validator.go)."""
    validations = [
        {
            "expression": f"variables.c{i}",
            "messageExpression": f"variables.c{i} ? 'held' : 'failed'",
        }
        for i in range(10)
    ]
    install(api, variables=costly(10), validations=validations)
    assert refusal(api) == (422, "Invalid", f"failed messageExpression: {OUT_OF_BUDGET}")


def test_a_policy_is_not_refused_at_create_for_its_estimated_cost(api: client.ApiClient) -> None:
    """kube-apiserver estimates the cost of a CRD's validation rules at create, but not of a
    policy's expressions (pkg/apis/admissionregistration/validation has no EstimateCost): a
    policy whose worst case is unbounded is stored, and limited when it runs."""
    unbounded = "object.data.all(k, object.data.all(l, object.data[k] + object.data[l] != ''))"
    install(api, validations=[{"expression": unbounded}])
    client.CoreV1Api(api).create_namespaced_config_map(
        "default", {"metadata": {"name": "small"}, "data": {"a": "b"}}
    )


@pytest.mark.slow
def test_a_costly_admission_stalls_no_other_client(
    server: APIServer, api: client.ApiClient
) -> None:
    """Three validations each stopped at the per-call limit (a million iterations' worth): while
    they run, another client's writes go through, and the refusal comes after them."""
    nested = "variables.n.all(a, variables.n.all(b, variables.n.all(c, a + b + c >= 0)))"
    install(api, variables=[HUNDRED], validations=[{"expression": nested}] * 3)
    core = client.CoreV1Api(api)
    path = "/api/v1/namespaces/default/configmaps"
    body = {"metadata": {"name": "costly"}}
    assert others_first(server, core, path, body, token="admin") == (["others", "slow"], 422)
