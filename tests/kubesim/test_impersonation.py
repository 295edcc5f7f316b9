"""`Impersonate-*` headers in kubesim, as kube-apiserver's impersonation filter answers them
(apiserver/pkg/endpoints/filters/impersonation): a caller whose RBAC allows `impersonate` on
the user (and each group) runs the request as that user, whose own RBAC then decides; one it
does not allow gets the authorizer's 403 for the `impersonate` check; groups without a user are
a 400. Never ignored. Through the real client over HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import CRD, status_of
from tests.support import api_client, apply_objects, kube_of

pytestmark = pytest.mark.integration
RBAC = "rbac.authorization.k8s.io"
TOKENS = {
    "admin": UserInfo("admin", groups=("system:masters",)),
    "alice": UserInfo("alice"),
    "eve": UserInfo("eve"),
}


def bound(name: str, subject: str, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
    ref = {"apiGroup": RBAC, "kind": "ClusterRole", "name": name}
    return [
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
         "rules": rules},
        {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
         "roleRef": ref, "subjects": [{"apiGroup": RBAC, "kind": "User", "name": subject}]},
    ]  # fmt: skip


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS, rbac=True) as srv:
        apply_objects(kube_of(srv, "admin"), [
            *bound("impersonate-bob", "alice", [
                {"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"],
                 "verbs": ["impersonate"]},
                {"apiGroups": [""], "resources": ["groups"], "resourceNames": ["readers"],
                 "verbs": ["impersonate"]}]),
            *bound("bob-reads", "bob", [
                {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list"]}]),
        ])  # fmt: skip
        yield srv


def core_as(server: APIServer, token: str, **headers: str) -> client.CoreV1Api:
    api = api_client(server, token)
    for name, value in headers.items():
        api.set_default_header(name.replace("_", "-"), value)
    return client.CoreV1Api(api)


def test_an_allowed_impersonation_runs_the_request_as_the_impersonated_user(
    server: APIServer,
) -> None:
    with pytest.raises(ApiException) as alone:
        core_as(server, "alice").list_namespace()
    assert alone.value.status == 403  # alice may not list namespaces herself
    core_as(server, "alice", Impersonate_User="bob").list_namespace()
    assert server.audit[-1].user == "bob"
    with pytest.raises(ApiException) as as_bob:
        core_as(server, "alice", Impersonate_User="bob").delete_namespace("default")
    assert 'User "bob" cannot delete resource "namespaces"' in status_of(as_bob.value)["message"]


def test_impersonation_without_the_impersonate_verb_is_kube_apiservers_403(
    server: APIServer,
) -> None:
    with pytest.raises(ApiException) as refused:
        core_as(server, "eve", Impersonate_User="bob").list_namespace()
    status = status_of(refused.value)
    assert (status["code"], status["reason"]) == (403, "Forbidden")
    assert status["message"] == (
        'users "bob" is forbidden: User "eve" cannot impersonate resource "users" in API group '
        '"" at the cluster scope'
    )
    with pytest.raises(ApiException) as group:
        core_as(
            server, "alice", Impersonate_User="bob", Impersonate_Group="admins"
        ).list_namespace()
    assert status_of(group.value)["message"] == (
        'groups "admins" is forbidden: User "alice" cannot impersonate resource "groups" in API '
        'group "" at the cluster scope'
    )


def test_groups_without_a_user_are_a_400(server: APIServer) -> None:
    with pytest.raises(ApiException) as refused:
        core_as(server, "alice", Impersonate_Group="readers").list_namespace()
    assert status_of(refused.value)["message"] == (
        "requested [{Group  readers    }] without impersonating a user"
    )
