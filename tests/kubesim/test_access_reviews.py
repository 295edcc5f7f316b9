"""Access reviews in kubesim as kube-apiserver answers them (pkg/registry/authorization): a
SelfSubjectAccessReview asks about the caller and any authenticated user may send one (what
`kubectl auth can-i` sends, as protobuf: run here for real); a SubjectAccessReview asks about
a user in exactly the groups it names and needs RBAC's grant to create; a spec without
attributes, with both kinds, or a SubjectAccessReview with neither user nor group is the 422
kube-apiserver sends. Neither is stored. A protobuf body of a kind kubesim has no schema for is
the 415 of a server that cannot decode it."""

from __future__ import annotations

import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from controller.kube.connection import Connection
from controller.kube.rest import RestKube
from kubesim import APIServer, ServingTLS, UserInfo
from tests.certificates import Authority, write_whole
from tests.kubesim.conftest import status_of
from tests.support import KUBECTL, api_client, apply_objects, kube_of

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


def test_kubectl_auth_can_i_answers_from_rbac(tmp_path: Path) -> None:
    """kubectl exits 0 with "yes" when allowed, 1 with "no" otherwise; it sends the review as
    protobuf, and no token over plain http (so: TLS)."""
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    authority = Authority("cluster")
    ca = write_whole(tmp_path / "ca.crt", authority.ca)
    cert, key = authority.server().write(tmp_path, "apiserver")
    with APIServer([], tokens=TOKENS, rbac=True, tls=ServingTLS(cert, key)) as srv:
        apply_objects(RestKube(Connection(srv.url, token="admin", ca_file=ca)), OBJECTS)

        def can_i(token: str, *args: str) -> tuple[int, str]:
            done = subprocess.run(
                [KUBECTL, "--server", srv.url, "--certificate-authority", str(ca),
                 "--token", token, "auth", "can-i", *args],
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            return done.returncode, done.stdout.strip() or done.stderr

        assert can_i("alice", "get", "configmaps", "-n", "ns1") == (0, "yes")
        assert can_i("alice", "get", "configmaps", "-n", "default") == (1, "no")
        assert can_i("alice", "delete", "configmaps", "-n", "ns1") == (1, "no")
        assert can_i("admin", "delete", "configmaps", "-A") == (0, "yes")


def test_a_protobuf_body_of_a_kind_without_a_schema_here_is_415(server: APIServer) -> None:
    type_meta = b"\x0a\x02v1\x12\x09ConfigMap"  # TypeMeta{apiVersion: v1, kind: ConfigMap}
    body = b"k8s\x00\x0a" + bytes([len(type_meta)]) + type_meta
    posted = urllib.request.Request(
        f"{server.url}/api/v1/namespaces/ns1/configmaps", data=body, method="POST",
        headers={"Authorization": "Bearer admin",
                 "Content-Type": "application/vnd.kubernetes.protobuf"},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(posted, timeout=30)
    assert refused.value.code == 415


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
