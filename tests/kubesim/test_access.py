"""Bearer-token authentication (401 as kube-apiserver answers it, tokens rotated at runtime)
and the audit log, whose verbs and resources are what an RBAC Role must grant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
from kubernetes import client, watch

from kubesim import APIServer, AuditRecord, ServingTLS, UserInfo
from tests.certificates import Authority, KeyPair, write_whole
from tests.kubesim.conftest import (
    CRD,
    GROUP,
    NAME,
    NAMESPACE,
    PLURAL,
    VERSION,
    addon,
    patch_forwarding_status,
    status_of,
)
from tests.support import api_client

pytestmark = pytest.mark.integration
CONTROLLER = UserInfo(
    "system:serviceaccount:obs:addon-status", uid="sa-1", groups=("system:serviceaccounts",)
)


@pytest.fixture
def secured() -> Iterator[APIServer]:
    with APIServer([CRD], tokens={"controller-token": CONTROLLER}) as server:
        yield server


@pytest.mark.parametrize("token", ["wrong-token", None])
def test_a_request_without_a_known_token_is_401(secured: APIServer, token: str | None) -> None:
    with api_client(secured, token) as api, pytest.raises(client.ApiException) as caught:
        client.CoreV1Api(api).list_namespace()
    assert status_of(caught.value) == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": "Unauthorized",
        "reason": "Unauthorized",
        "code": 401,
    }


def test_a_rotated_token_stops_working_and_the_new_one_works(secured: APIServer) -> None:
    with api_client(secured, "controller-token") as api:
        client.CoreV1Api(api).list_namespace()
        secured.set_tokens({"rotated-token": CONTROLLER})
        with pytest.raises(client.ApiException) as caught:
            client.CoreV1Api(api).list_namespace()
        assert caught.value.status == 401
    with api_client(secured, "rotated-token") as api:
        assert client.CoreV1Api(api).list_namespace().items


def test_without_a_token_table_callers_are_anonymous(
    server: APIServer, core: client.CoreV1Api
) -> None:
    core.list_namespace()
    assert server.audit[-1].user == "system:anonymous"


def test_the_audit_log_names_each_call_as_rbac_does(secured: APIServer) -> None:
    with api_client(secured, "controller-token") as api:
        client.CoreV1Api(api).create_namespace(
            client.V1Namespace(metadata=client.V1ObjectMeta(name=NAMESPACE))
        )
        custom = client.CustomObjectsApi(api)
        secured.clear_audit()
        created = custom.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, addon())
        custom.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL)
        watcher = watch.Watch()
        for _ in watcher.stream(
            custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            NAMESPACE,
            PLURAL,
            timeout_seconds=5,
        ):
            watcher.stop()
        patch_forwarding_status(custom, NAMESPACE)
        current = custom.get_namespaced_custom_object_status(
            GROUP, VERSION, NAMESPACE, PLURAL, NAME
        )
        custom.replace_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, NAME, {**current, "spec": {"interval": 60}}
        )
        custom.delete_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
        with pytest.raises(client.ApiException):
            custom.get_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, NAME)
    user = CONTROLLER.username

    def record(verb: str, sub: str = "", name: str = NAME, code: int = 200) -> AuditRecord:
        return AuditRecord(user, verb, GROUP, PLURAL, sub, NAMESPACE, name, code)

    assert secured.audit == [
        record("create", code=201),
        record("list", name=""),
        record("watch", name=""),
        record("patch", "status"),
        record("get", "status"),
        record("update"),
        record("delete"),
        record("get", code=404),
    ]
    assert created["metadata"]["name"] == NAME
    assert secured.count_requests(resource=PLURAL) == 4
    assert secured.count_requests(resource=PLURAL, subresource="status") == 1
    assert secured.count_requests(verbs={"get"}, successful=False) == 2


def test_discovery_and_version_are_audited_as_non_resource_urls(
    server: APIServer, api: client.ApiClient
) -> None:
    client.VersionApi(api).get_code()
    [entry] = server.audit
    assert (entry.verb, entry.path, entry.resource, entry.code) == ("get", "/version/", "", 200)


class TestClientCertificates:
    """Over TLS with `--client-ca-file`, as kube-apiserver's x509 authenticator: a client
    certificate signed by the CA is the user named by its subject's CN, in the groups of its
    O entries; it is asked before any token; one signed by another CA ends the handshake."""

    @pytest.fixture
    def authority(self) -> Authority:
        return Authority("cluster")

    @pytest.fixture
    def tls_server(self, authority: Authority, tmp_path: Path) -> Iterator[APIServer]:
        cert, key = authority.server().write(tmp_path, "apiserver")
        ca = write_whole(tmp_path / "ca.crt", authority.ca)
        tls = ServingTLS(cert, key, client_ca_file=ca)
        with APIServer([CRD], tokens={"controller-token": CONTROLLER}, tls=tls) as server:
            yield server

    def _client(self, server: APIServer, ca: Path, pair: KeyPair | None) -> client.ApiClient:
        configuration = client.Configuration(host=server.url)
        configuration.ssl_ca_cert = str(ca)
        if pair is not None:
            configuration.cert_file, configuration.key_file = map(
                str, pair.write(ca.parent, "client")
            )
        return client.ApiClient(configuration)

    def test_the_subject_names_the_user_and_groups(
        self, tls_server: APIServer, authority: Authority, tmp_path: Path
    ) -> None:
        ca = write_whole(tmp_path / "trusted.crt", authority.ca)
        pair = authority.client(
            "system:open-cluster-management:cluster:c1:addon:a:agent:x", ("g1",)
        )
        with self._client(tls_server, ca, pair) as api:
            client.CoreV1Api(api).list_namespace()
        [record] = tls_server.audit
        assert record.user == "system:open-cluster-management:cluster:c1:addon:a:agent:x"
        assert tls_server.url.startswith("https://")

    def test_no_certificate_and_no_token_is_401(
        self, tls_server: APIServer, authority: Authority, tmp_path: Path
    ) -> None:
        ca = write_whole(tmp_path / "trusted.crt", authority.ca)
        with self._client(tls_server, ca, None) as api, pytest.raises(client.ApiException) as e:
            client.CoreV1Api(api).list_namespace()
        assert e.value.status == 401

    def test_a_certificate_from_another_authority_ends_the_handshake(
        self, tls_server: APIServer, authority: Authority, tmp_path: Path
    ) -> None:
        ca = write_whole(tmp_path / "trusted.crt", authority.ca)
        stranger = Authority("elsewhere").client("mallory", ("system:masters",))
        api = self._client(tls_server, ca, stranger)
        api.configuration.retries = 0
        with api, pytest.raises(urllib3.exceptions.HTTPError):
            client.CoreV1Api(api).list_namespace()
        assert tls_server.audit == []


def test_anonymous_auth_lets_a_request_without_credentials_in_but_not_a_wrong_token() -> None:
    """kube-apiserver's --anonymous-auth: no credentials is `system:anonymous` (in the group
    system:unauthenticated, which RBAC may grant to); a token that is not known is still 401."""
    tokens = {"controller-token": CONTROLLER}
    with APIServer([CRD], tokens=tokens, anonymous=True) as server:
        with api_client(server) as anonymous:
            client.CoreV1Api(anonymous).list_namespace()
        with api_client(server, "wrong") as wrong, pytest.raises(client.ApiException) as caught:
            client.CoreV1Api(wrong).list_namespace()
    assert caught.value.status == 401
    assert [r.user for r in server.audit] == ["system:anonymous", ""]
