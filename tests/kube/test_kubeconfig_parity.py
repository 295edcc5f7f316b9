"""Kubeconfig parity: a corpus of kubeconfigs loaded through the project's seam and through the
official `kubernetes` package's loader (the oracle where it agrees with client-go), each then
calling one kube-apiserver over TLS with `--client-ca-file`: both must reach it as the same user
(or both be refused). Where the oracle departs from client-go the case says so and holds the
seam to client-go, whose rule the comment names."""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from controller.kube.kubeconfig import KubeconfigSource
from kubesim import APIServer, ServingTLS, UserInfo
from tests.certificates import Authority, write_whole

pytestmark = pytest.mark.integration
TOKEN, OTHER, PLUGIN = "corpus-token", "other-token", "plugin-token"


@dataclass
class Hub:
    server: APIServer
    authority: Authority
    home: Path  # where the corpus's kubeconfigs and the files they name live

    def users(self) -> list[str]:
        return [record.user for record in self.server.audit]


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[Hub]:
    authority = Authority("hub")
    cert, key = authority.server().write(tmp_path, "apiserver")
    client_ca = write_whole(tmp_path / "client-ca.crt", authority.ca)
    tokens = {TOKEN: UserInfo("token-user"), OTHER: UserInfo("other-user"),
              PLUGIN: UserInfo("plugin-user")}  # fmt: skip
    with APIServer(
        [], tokens=tokens, tls=ServingTLS(cert, key, client_ca_file=client_ca)
    ) as server:
        yield Hub(server, authority, tmp_path)


def kubeconfig(
    hub: Hub, user: dict[str, Any], *, cluster: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One cluster (the hub, its CA inline unless `cluster` says otherwise), the user `u` of
    the current context `c`, and a context `other` of a user with the other token."""
    ca = base64.b64encode(hub.authority.ca).decode()
    cluster = cluster or {"server": hub.server.url, "certificate-authority-data": ca}
    contexts = [{"name": "c", "context": {"cluster": "c", "user": "u"}},
                {"name": "other", "context": {"cluster": "c", "user": "nobody"}}]  # fmt: skip
    users = [{"name": "u", "user": user}, {"name": "nobody", "user": {"token": OTHER}}]
    return {"apiVersion": "v1", "kind": "Config", "current-context": "c", "contexts": contexts,
            "clusters": [{"name": "c", "cluster": cluster}], "users": users}  # fmt: skip


def write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def token_inline(hub: Hub) -> str:
    return str(write(hub.home / "kubeconfig", kubeconfig(hub, {"token": TOKEN})))


def token_file_relative(hub: Hub) -> str:
    # No line break after the token: client-go trims one (and so does the seam,
    # tests/kube/test_connection.py), the oracle sends it and fails on the header.
    (hub.home / "sa").mkdir()
    (hub.home / "sa" / "token").write_text(TOKEN, encoding="utf-8")
    return str(write(hub.home / "kubeconfig", kubeconfig(hub, {"tokenFile": "sa/token"})))


def certificate_inline(hub: Hub) -> str:
    pair = hub.authority.client("cert-user", ("team",))
    user = {"client-certificate-data": base64.b64encode(pair.cert).decode(),
            "client-key-data": base64.b64encode(pair.key).decode()}  # fmt: skip
    return str(write(hub.home / "kubeconfig", kubeconfig(hub, user)))


def certificate_files_and_ca_file_relative(hub: Hub) -> str:
    pair = hub.authority.client("file-cert-user")
    (hub.home / "pki").mkdir()
    pair.write(hub.home / "pki", "client")
    write_whole(hub.home / "pki" / "ca.crt", hub.authority.ca)
    user = {"client-certificate": "pki/client.crt", "client-key": "pki/client.key"}
    cluster = {"server": hub.server.url, "certificate-authority": "pki/ca.crt"}
    return str(write(hub.home / "kubeconfig", kubeconfig(hub, user, cluster=cluster)))


def exec_plugin_token(hub: Hub) -> str:
    plugin = hub.home / "bin" / "token-plugin"
    plugin.parent.mkdir()
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": PLUGIN}}  # fmt: skip
    plugin.write_text(f"#!{sys.executable}\nimport json\nprint(json.dumps({credential!r}))\n")
    plugin.chmod(0o700)
    user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                     "command": str(plugin), "args": [], "interactiveMode": "Never"}}  # fmt: skip
    return str(write(hub.home / "kubeconfig", kubeconfig(hub, user)))


CORPUS: dict[str, Callable[[Hub], str]] = {
    "token": token_inline,
    "token-file": token_file_relative,
    "client-certificate-data": certificate_inline,
    "certificate-and-ca-files": certificate_files_and_ca_file_relative,
    "exec-plugin": exec_plugin_token,
}
# Not here: `KUBECONFIG=a:b`. The oracle takes the last file's current-context, client-go the
# first's; tests/kube/test_kubeconfig.py holds the seam to the real kubectl on that list.


@pytest.mark.parametrize(
    ("case", "context"),
    [*((case, None) for case in CORPUS.values()), (token_inline, "other")],
    ids=[*CORPUS.keys(), "a-chosen-context"],
)
def test_the_seam_reaches_the_server_as_the_official_loader_does(
    hub: Hub, case: Callable[[Hub], str], context: str | None
) -> None:
    path = case(hub)
    api = config.new_client_from_config(config_file=path, context=context)
    try:
        client.VersionApi(api).get_code()
    finally:
        api.close()
    source = KubeconfigSource(path, context)
    try:
        assert source.current().request("GET", "/version").status == 200
    finally:
        source.close()
    oracle, seam = hub.users()
    assert seam == oracle != ""
    assert (seam == "other-user") == (context == "other")
