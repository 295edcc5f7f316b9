"""Access reviews in kubesim as kube-apiserver answers them (pkg/registry/authorization): a
SelfSubjectAccessReview asks about the caller and any authenticated user may send one (what
`kubectl auth can-i` sends, though kubectl sends it as protobuf, which kubesim does not read: the
official client's JSON is the reference here); a SubjectAccessReview asks about a user in
exactly the groups it names and needs RBAC's grant to create; a spec without attributes, with
both kinds, or a SubjectAccessReview with neither user nor group is the 422 kube-apiserver
sends. Neither is stored."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer, UserInfo
from tests.kubesim.conftest import status_of
from tests.support import api_client, apply_objects, kube_of

pytestmark = pytest.mark.integration
TOKENS = {
    "admin": UserInfo("admin", groups=("system:masters",)),
    "alice": UserInfo("alice", groups=("team-a",)),
}
READ_CONFIG_MAPS = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]


OBJECTS = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns1"}},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
     "metadata": {"name": "read-config"}, "rules": READ_CONFIG_MAPS},
    {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
     "metadata": {"name": "team-a-reads", "namespace": "ns1"},
     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                 "name": "read-config"},
     "subjects": [{"kind": "Group", "name": "team-a"}]},
]  # fmt: skip


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([], tokens=TOKENS, rbac=True) as srv:
        apply_objects(kube_of(srv, "admin"), OBJECTS)
        yield srv


def _self_review(server: APIServer, token: str, spec: dict[str, Any]) -> Any:
    api = client.AuthorizationV1Api(api_client(server, token))
    return api.create_self_subject_access_review({"spec": spec})


def test_a_self_review_answers_from_rbac_and_is_not_stored(server: APIServer) -> None:
    def allowed(token: str, verb: str, namespace: str) -> bool:
        attributes = {"namespace": namespace, "verb": verb, "resource": "configmaps"}
        answer = _self_review(server, token, {"resourceAttributes": attributes})
        assert answer.spec.resource_attributes.verb == verb
        return bool(answer.status.allowed)

    assert allowed("alice", "list", "ns1")
    assert not allowed("alice", "list", "default")  # a RoleBinding holds in its namespace
    assert not allowed("alice", "delete", "ns1")
    assert allowed("admin", "delete", "")  # system:masters
    non_resource = {"nonResourceAttributes": {"path": "/version", "verb": "get"}}
    assert _self_review(server, "alice", non_resource).status.allowed is True
    listing = urllib.request.Request(
        f"{server.url}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        headers={"Authorization": "Bearer admin"},
    )
    with pytest.raises(urllib.error.HTTPError) as refused:  # create is its only verb
        urllib.request.urlopen(listing, timeout=30)
    assert refused.value.code == 405


def test_a_subject_review_takes_the_groups_as_given_and_needs_a_grant(server: APIServer) -> None:
    attributes = {"namespace": "ns1", "verb": "get", "resource": "configmaps"}
    admin = client.AuthorizationV1Api(api_client(server, "admin"))

    def allowed(**subject: Any) -> bool:
        body = {"spec": {"resourceAttributes": attributes, **subject}}
        return bool(admin.create_subject_access_review(body).status.allowed)

    assert allowed(user="bob", groups=["team-a"])
    assert not allowed(user="bob")  # not in team-a: the review adds no group
    assert not allowed(user="alice")  # the review's groups, not alice's token's
    alice = client.AuthorizationV1Api(api_client(server, "alice"))
    with pytest.raises(client.ApiException) as caught:
        alice.create_subject_access_review({"spec": {"resourceAttributes": attributes,
                                                     "user": "bob"}})  # fmt: skip
    assert caught.value.status == 403
    assert 'cannot create resource "subjectaccessreviews"' in status_of(caught.value)["message"]


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        ({}, "spec.resourceAttributes",
         "exactly one of nonResourceAttributes or resourceAttributes must be specified"),
        ({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"path": "/"}},
         "spec.nonResourceAttributes",
         "cannot be specified in combination with resourceAttributes"),
    ],
    ids=["neither", "both"],
)  # fmt: skip
def test_a_review_without_one_kind_of_attributes_is_refused(
    server: APIServer, spec: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(client.ApiException) as caught:
        _self_review(server, "alice", spec)
    assert caught.value.status == 422
    causes = status_of(caught.value)["details"]["causes"]
    assert [(c["field"], message in c["message"]) for c in causes] == [(field, True)]
