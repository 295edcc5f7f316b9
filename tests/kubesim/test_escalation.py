"""RBAC's escalation check in kubesim, as kube-apiserver's RBAC storage runs it
(pkg/registry/rbac/rolebinding/policybased and validation.ConfirmNoEscalation): creating a
RoleBinding to a role whose rules its author does not hold is refused with 403 and the missing
rights, unless the author may `bind` that role; a Role is refused likewise unless its author
may `escalate`; `system:masters` is never checked. Through the real client over HTTP."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import CRD, GROUP, NAME, PLURAL
from tests.kubesim.meanwhile import others_first
from tests.support import api_client, apply_objects, kube_of

pytestmark = pytest.mark.integration
RBAC = "rbac.authorization.k8s.io"
ADMIN = UserInfo("admin", groups=("system:masters",))
MANAGER = UserInfo("system:serviceaccount:hub:manager", groups=("system:serviceaccounts",))
AGENT_RULES = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "resourceNames": [NAME], "verbs": ["get"]},
    {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "resourceNames": [NAME],
     "verbs": ["update"]},
]  # fmt: skip
# What the manager may do of its own, as OCM's addon manager: write RoleBindings, nothing more.
MANAGER_RULES = [{"apiGroups": [RBAC], "resources": ["rolebindings"],
                  "verbs": ["create", "get", "update", "delete"]}]  # fmt: skip


def _role(name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name},
            "rules": rules}  # fmt: skip


def _grant(name: str, role: str, user: str) -> dict[str, Any]:
    ref = {"apiGroup": RBAC, "kind": "ClusterRole", "name": role}
    subjects = [{"apiGroup": RBAC, "kind": "User", "name": user}]
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": ref, "subjects": subjects}  # fmt: skip


def _binding(role: str) -> dict[str, Any]:
    ref = {"apiGroup": RBAC, "kind": "ClusterRole", "name": role}
    return {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": "agent", "namespace": "cluster1"}, "roleRef": ref,
            "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "agents"}]}  # fmt: skip


@pytest.fixture
def server() -> Iterator[APIServer]:
    tokens = {"admin": ADMIN, "manager": MANAGER}
    with APIServer([CRD], tokens=tokens, rbac=True, namespaces=["default", "cluster1"]) as srv:
        apply_objects(kube_of(srv, "admin"), [
            _role("agent", AGENT_RULES), _role("manager", MANAGER_RULES),
            _grant("manager", "manager", MANAGER.username),
        ])  # fmt: skip
        yield srv


def _create_binding(server: APIServer, role: str) -> None:
    with api_client(server, "manager") as api:
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.create_namespaced_role_binding("cluster1", _binding(role))


def test_a_binding_to_rules_its_author_does_not_hold_is_refused_naming_them(
    server: APIServer,
) -> None:
    with pytest.raises(ApiException) as refused:
        _create_binding(server, "agent")
    assert refused.value.status == 403
    message = refused.value.body
    assert "is attempting to grant RBAC permissions not currently held" in message
    assert '{APIGroups:[\\"observability.open-cluster-management.io\\"], ' in message
    assert "ResourceNames" in message and 'Verbs:[\\"update\\"]' in message


def test_bind_on_the_role_by_name_lets_its_holder_bind_it_and_nothing_else(
    server: APIServer,
) -> None:
    bind = {"apiGroups": [RBAC], "resources": ["clusterroles"], "resourceNames": ["agent"],
            "verbs": ["bind"]}  # fmt: skip
    apply_objects(kube_of(server, "admin"), [
        _role("bind-agent", [bind]), _grant("bind-agent", "bind-agent", MANAGER.username),
    ])  # fmt: skip
    _create_binding(server, "agent")
    apply_objects(kube_of(server, "admin"), [_role("other", AGENT_RULES)])
    with api_client(server, "manager") as api:
        rbac = client.RbacAuthorizationV1Api(api)
        body = {**_binding("other"), "metadata": {"name": "other", "namespace": "cluster1"}}
        with pytest.raises(ApiException) as refused:
            rbac.create_namespaced_role_binding("cluster1", body)
    assert refused.value.status == 403


def test_holding_every_rule_is_enough_without_bind(server: APIServer) -> None:
    apply_objects(kube_of(server, "admin"), [
        _role("holds", AGENT_RULES), _grant("holds", "holds", MANAGER.username),
    ])  # fmt: skip
    _create_binding(server, "agent")


def test_a_role_granting_what_its_author_lacks_is_refused_and_masters_are_never_checked(
    server: APIServer,
) -> None:
    create_roles = {"apiGroups": [RBAC], "resources": ["clusterroles"], "verbs": ["create"]}
    apply_objects(kube_of(server, "admin"), [
        _role("role-writer", [create_roles]),
        _grant("role-writer", "role-writer", MANAGER.username),
    ])  # fmt: skip
    with api_client(server, "manager") as api:
        rbac = client.RbacAuthorizationV1Api(api)
        with pytest.raises(ApiException) as refused:
            rbac.create_cluster_role(_role("wider", AGENT_RULES))
    assert refused.value.status == 403
    with api_client(server, "admin") as api:
        client.RbacAuthorizationV1Api(api).create_cluster_role(_role("wider", AGENT_RULES))


def test_a_binding_to_a_role_that_does_not_exist_is_its_404(server: APIServer) -> None:
    with pytest.raises(ApiException) as refused:
        _create_binding(server, "missing")
    assert refused.value.status == 404


def test_missing_rights_are_compacted_a_line_per_resource(server: APIServer) -> None:
    """ConfirmNoEscalation words its refusal after RBAC's CompactRules: one line per group,
    resource and name, their verbs together (a huge role is no huge answer)."""
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": "wide", "namespace": "cluster1"},
            "rules": [{"apiGroups": [""], "resources": ["pods", "secrets"],
                       "verbs": ["get", "list", "watch"]}]}  # fmt: skip
    _allow_roles(server)
    with api_client(server, "manager") as api, pytest.raises(ApiException) as refused:
        client.RbacAuthorizationV1Api(api).create_namespaced_role("cluster1", role)
    assert refused.value.status == 403
    assert json.loads(refused.value.body)["message"].split("\n")[1:] == [
        '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list" "watch"]}',
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get" "list" "watch"]}',
    ]


def _allow_roles(server: APIServer, *extra: dict[str, Any]) -> None:
    rules = [{"apiGroups": [RBAC], "resources": ["roles"], "verbs": ["create"]}, *extra]
    grant = _grant("roles", "roles", MANAGER.username)
    apply_objects(kube_of(server, "admin"), [_role("roles", rules), grant])


@pytest.mark.slow
def test_a_huge_roles_check_stalls_no_other_client(server: APIServer) -> None:
    """kube-apiserver checks outside any lock of its storage: while a role of 600,000 rights
    (all held, so its answer is small and quick) is checked, another client's writes go
    through, and the role's 201 comes after them."""
    _allow_roles(server, {"apiGroups": [""], "resources": ["*"], "verbs": ["*"]})
    resources = [f"r{i:04}" for i in range(2000)]
    verbs = [f"v{i:03}" for i in range(300)]
    huge = {"apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": "huge", "namespace": "cluster1"},
            "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]}  # fmt: skip
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/cluster1/roles"
    with api_client(server, "admin") as api:
        made = others_first(server, client.CoreV1Api(api), path, huge, token="manager")
    assert made == (["others", "slow"], 201)
