"""RBAC in kubesim, each case as kube-apiserver's RBAC authorizer answers it (plugin/pkg/auth/
authorizer/rbac and the bootstrap policy): a caller without a binding gets the 403 with
kube-apiserver's words; a RoleBinding grants in its namespace only, a ClusterRoleBinding
everywhere; `resourceNames` hold for requests that name the object (a list or watch by its
field selector, never a create); a subresource is its own resource; subjects are users,
groups and service accounts; `system:masters` may do anything and every authenticated user
may read discovery; a binding's `roleRef` never changes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from controller.kube.api import InvalidError
from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import CRD, GROUP, NAME, PLURAL, VERSION, addon, status_of
from tests.support import api_client, apply_objects, kube_of

pytestmark = pytest.mark.integration
RBAC = "rbac.authorization.k8s.io"

ADMIN = UserInfo("admin", groups=("system:masters",))
ALICE = UserInfo("alice", groups=("team-a",))
ROBOT = UserInfo("system:serviceaccount:ns1:robot", groups=("system:serviceaccounts",))
TOKENS = {"admin": ADMIN, "alice": ALICE, "robot": ROBOT}
READ_AND_WRITE_STATUS = [
    {"apiGroups": [GROUP], "resources": [PLURAL], "resourceNames": [NAME], "verbs": ["get"]},
    {"apiGroups": [GROUP], "resources": [f"{PLURAL}/status"], "resourceNames": [NAME],
     "verbs": ["update"]},
]  # fmt: skip


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=TOKENS, rbac=True) as srv:
        with api_client(srv, "admin") as admin:
            core, custom = client.CoreV1Api(admin), client.CustomObjectsApi(admin)
            for namespace in ("ns1", "ns2"):
                core.create_namespace({"metadata": {"name": namespace}})
                custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, addon())
        yield srv


def _cluster_role(server: APIServer, name: str, rules: list[dict[str, Any]]) -> None:
    body = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name}, "rules": rules}  # fmt: skip
    apply_objects(kube_of(server, "admin"), [body])


def _bind(server: APIServer, namespace: str, role: str, subject: dict[str, str]) -> None:
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": f"{role}-{subject['name']}", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }  # fmt: skip
    apply_objects(kube_of(server, "admin"), [body])


def _custom(server: APIServer, token: str) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client(server, token))


def _denied(call: Any) -> dict[str, Any]:
    with pytest.raises(client.ApiException) as caught:
        call()
    assert caught.value.status == 403
    return status_of(caught.value)


def test_a_caller_without_a_binding_gets_kube_apiservers_403(server: APIServer) -> None:
    alice = _custom(server, "alice")
    body = _denied(lambda: alice.get_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL, NAME))
    assert body["reason"] == "Forbidden"
    assert body["message"] == (
        f'{PLURAL}.{GROUP} "{NAME}" is forbidden: User "alice" cannot get resource '
        f'"{PLURAL}" in API group "{GROUP}" in the namespace "ns1"'
    )
    listed = _denied(lambda: alice.list_cluster_custom_object(GROUP, VERSION, PLURAL))
    assert listed["message"].endswith(
        f'cannot list resource "{PLURAL}" in API group "{GROUP}" at the cluster scope'
    )
    assert server.count_requests(verbs=("get", "list"), successful=False) == 2


def test_a_role_binding_grants_in_its_namespace_only(server: APIServer) -> None:
    _cluster_role(server, "copy-writer", READ_AND_WRITE_STATUS)
    _bind(server, "ns1", "copy-writer", {"kind": "Group", "name": "team-a",
                                          "apiGroup": "rbac.authorization.k8s.io"})  # fmt: skip
    alice = _custom(server, "alice")
    found = alice.get_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL, NAME)
    alice.replace_namespaced_custom_object_status(GROUP, VERSION, "ns1", PLURAL, NAME, found)
    _denied(lambda: alice.get_namespaced_custom_object(GROUP, VERSION, "ns2", PLURAL, NAME))
    # The status subresource is a resource of its own: the object itself stays read-only.
    _denied(
        lambda: alice.replace_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL, NAME, found)
    )


def test_resource_names_hold_for_requests_that_name_the_object(server: APIServer) -> None:
    rules = [{"apiGroups": [GROUP], "resources": [PLURAL], "resourceNames": [NAME],
              "verbs": ["get", "list", "watch", "create"]}]  # fmt: skip
    _cluster_role(server, "named", rules)
    _bind(server, "ns1", "named", {"kind": "User", "name": "alice",
                                    "apiGroup": "rbac.authorization.k8s.io"})  # fmt: skip
    alice = _custom(server, "alice")
    by_name = f"metadata.name={NAME}"
    items = alice.list_namespaced_custom_object(
        GROUP, VERSION, "ns1", PLURAL, field_selector=by_name
    )
    assert [i["metadata"]["name"] for i in items["items"]] == [NAME]
    _denied(lambda: alice.list_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL))
    # A create names nothing in its URL: resourceNames never grant it.
    _denied(
        lambda: alice.create_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL, addon(NAME))
    )


def test_a_service_account_subject_is_its_user_name(server: APIServer) -> None:
    _cluster_role(server, "copy-writer", READ_AND_WRITE_STATUS)
    _bind(
        server, "ns1", "copy-writer", {"kind": "ServiceAccount", "name": "robot"}
    )  # ns: the binding's
    robot = _custom(server, "robot")
    assert robot.get_namespaced_custom_object(GROUP, VERSION, "ns1", PLURAL, NAME)["metadata"]


def test_a_cluster_role_binding_grants_everywhere_and_masters_need_none(server: APIServer) -> None:
    _cluster_role(server, "reader", [{"apiGroups": [GROUP], "resources": [PLURAL],
                                      "verbs": ["get", "list"]}])  # fmt: skip
    body = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "reader"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "reader"},
        "subjects": [{"kind": "User", "name": "alice", "apiGroup": RBAC}],
    }  # fmt: skip
    apply_objects(kube_of(server, "admin"), [body])
    listed = _custom(server, "alice").list_cluster_custom_object(GROUP, VERSION, PLURAL)
    assert len(listed["items"]) == 2
    assert _custom(server, "admin").list_cluster_custom_object(GROUP, VERSION, PLURAL)["items"]


def test_every_authenticated_user_reads_discovery_and_version(server: APIServer) -> None:
    with api_client(server, "alice") as alice:
        assert client.VersionApi(alice).get_code().git_version
        groups = client.ApisApi(alice).get_api_versions()
    assert GROUP in {g.name for g in groups.groups}
    with api_client(server, "alice") as alice, pytest.raises(client.ApiException) as caught:
        client.CoreV1Api(alice).list_namespace()
    assert caught.value.status == 403


def test_a_bindings_role_ref_never_changes(server: APIServer) -> None:
    _cluster_role(
        server, "reader", [{"apiGroups": [GROUP], "resources": [PLURAL], "verbs": ["get"]}]
    )
    _bind(server, "ns1", "reader", {"kind": "User", "name": "alice"})
    admin = kube_of(server, "admin")
    bindings = admin.discover("rbac.authorization.k8s.io/v1", "RoleBinding")
    binding = admin.get(bindings, "ns1", "reader-alice")
    binding["roleRef"]["name"] = "cluster-admin"
    with pytest.raises(InvalidError) as caught:
        admin.replace(bindings, "ns1", "reader-alice", binding)
    assert caught.value.status == 422
    assert "is invalid: roleRef: Invalid value" in str(caught.value)
