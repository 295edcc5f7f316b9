"""The hub client from a mounted kubeconfig: rebuilt when the Secret is rotated by symlink swap
(the kubeconfig, or a certificate it names), kept when a rotation is broken, and every error
names the path without quoting the file's secrets."""

from __future__ import annotations

import http.server
import logging
import subprocess
import threading
from pathlib import Path

import pytest
import yaml

from controller.kube.kubeconfig import (
    KubeconfigError,
    KubeconfigSource,
    kubeconfig_files,
    kubeconfig_yaml,
)
from kubesim import APIServer, ServingTLS, UserInfo
from tests.certificates import Authority, write_whole
from tests.kube.credential_plugin import exec_plugin
from tests.kube.mount import SecretMount
from tests.support import KUBECTL

TOKEN = "s3cr3t-token-value"
SERVER = "http://127.0.0.1:6443"

INSECURE_WITH_CA = kubeconfig_yaml(server="https://127.0.0.1:6443", token=TOKEN).replace(
    "server: ",
    "insecure-skip-tls-verify: true\n    certificate-authority-data: QUFBQQ==\n    server: ",
)
MISSING_TOKEN_FILE = kubeconfig_yaml(server="https://127.0.0.1:6443", token=TOKEN).replace(
    f"token: {TOKEN}", "tokenFile: nowhere/token"
)


def token_of(source: KubeconfigSource) -> str:
    header = source.current()._authorization(10.0) or ""  # what each request will carry
    return header.removeprefix("Bearer ")


@pytest.fixture
def mount(tmp_path: Path) -> SecretMount:
    mounted = SecretMount(tmp_path / "hub-kubeconfig")
    mounted.write(kubeconfig_yaml(server=SERVER, token=TOKEN))
    return mounted


def test_the_client_comes_from_the_file(mount: SecretMount) -> None:
    source = KubeconfigSource(mount.path)
    assert source.current().server == SERVER
    assert token_of(source) == TOKEN


def test_an_unchanged_file_keeps_the_same_client(mount: SecretMount) -> None:
    source = KubeconfigSource(mount.path)
    assert source.current() is source.current()


def test_a_rotated_secret_gives_a_new_client(mount: SecretMount) -> None:
    source = KubeconfigSource(mount.path)
    old = source.current()
    mount.write(kubeconfig_yaml(server=SERVER, token="rotated"))
    assert source.current() is not old
    assert token_of(source) == "rotated"


def test_a_rewrite_with_the_same_content_keeps_the_client(mount: SecretMount) -> None:
    source = KubeconfigSource(mount.path)
    old = source.current()
    mount.write(kubeconfig_yaml(server=SERVER, token=TOKEN))
    assert source.current() is old


def test_a_broken_rotation_keeps_the_old_client(
    mount: SecretMount, caplog: pytest.LogCaptureFixture
) -> None:
    source = KubeconfigSource(mount.path)
    old = source.current()
    mount.write(f"users: [{{name: hub, user: {{token: {TOKEN}-new}}")  # unterminated
    with caplog.at_level(logging.DEBUG):
        assert source.current() is old
        assert source.current() is old
        assert source.reload() is False
    assert source.current() is old
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, "a broken file is reported once, not on every call"
    assert str(mount.path) in warnings[0].getMessage()
    assert TOKEN not in caplog.text


def test_reload_rebuilds_even_when_the_file_looks_unchanged(mount: SecretMount) -> None:
    source = KubeconfigSource(mount.path)
    old = source.current()
    assert source.reload() is True
    assert source.current() is not old


def test_a_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "kubeconfig"
    with pytest.raises(KubeconfigError, match="does not exist") as caught:
        KubeconfigSource(missing)
    assert str(missing) in str(caught.value)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        pytest.param(  # libyaml marks the end of the stream
            f"users: [{{token: {TOKEN}", "not valid YAML at line 2, column 1", id="bad-yaml"
        ),
        pytest.param("", "empty or not a mapping", id="empty"),
        pytest.param(f"- {TOKEN}\n", "empty or not a mapping", id="a-list"),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace(
                "current-context: hub", "current-context: other"
            ),
            "cannot be used",
            id="unknown-context",
        ),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace("server: ", "serverr: "),
            "has no server",
            id="cluster-without-server",
        ),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace(
                f"token: {TOKEN}", f"username: admin\n    password: {TOKEN}"
            ),
            "basic auth, removed in 1.19",
            id="basic-auth",
        ),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace(
                f"token: {TOKEN}", f"auth-provider: {{name: oidc, config: {{id-token: {TOKEN}}}}}"
            ),
            "auth-provider, which addon-status does not support",
            id="auth-provider",
        ),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace(
                "server: ", f"proxy-url: socks5://u:{TOKEN}@proxy:1080\n    server: "
            ),
            "socks proxies are not supported",
            id="socks-proxy",
        ),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace(
                f"token: {TOKEN}", f"token: {TOKEN}\n    as-groups: [system:masters]"
            ),
            "as-uid, as-groups or as-user-extra without as: impersonation needs a user",
            id="impersonation-without-a-user",
        ),
        pytest.param(
            INSECURE_WITH_CA,
            "insecure-skip-tls-verify beside a certificate authority",
            id="insecure-with-ca",
        ),
        pytest.param(
            kubeconfig_yaml(server=SERVER, token=TOKEN).replace(
                f"token: {TOKEN}", f'token: "{TOKEN}\\nX-Injected: 1"'
            ),
            "token holds a line break or control character",
            id="token-with-a-line-break",
        ),
        pytest.param(
            MISSING_TOKEN_FILE, "tokenFile .*/nowhere/token cannot be read", id="missing-token-file"
        ),
    ],
)
def test_a_broken_kubeconfig_names_the_path_and_not_the_secret(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(KubeconfigError, match=problem) as caught:
        KubeconfigSource(path)
    assert str(path) in str(caught.value)
    assert TOKEN not in str(caught.value)
    cause = caught.value.__cause__
    assert cause is None or TOKEN not in str(cause)


def test_a_rotated_client_certificate_is_picked_up_when_its_files_change(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The addon framework's hub kubeconfig names `tls.crt` and `tls.key` beside it; a rotation
    swaps those and leaves the kubeconfig byte for byte. The next call already uses the new
    certificate (kube-apiserver over TLS, as kubesim serves it, sees the new subject), not the
    next failure, and the reload is one log line."""
    clients, server_side = Authority("hub clients"), Authority("hub")
    cert, key = server_side.server().write(tmp_path, "apiserver")
    client_ca = write_whole(tmp_path / "client-ca.crt", clients.ca)
    tls = ServingTLS(cert, key, client_ca_file=client_ca)
    with APIServer([], tls=tls, tokens={}) as hub:
        mount = SecretMount(tmp_path / "hub-kubeconfig")
        cluster = {"server": hub.url, "certificate-authority": "ca.crt"}
        user = {"client-certificate": "tls.crt", "client-key": "tls.key"}
        kubeconfig = yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "hub",
            "clusters": [{"name": "hub", "cluster": cluster}],
            "users": [{"name": "agent", "user": user}],
            "contexts": [{"name": "hub", "context": {"cluster": "hub", "user": "agent"}}],
        }).encode()  # fmt: skip

        def mount_certificate(user: str) -> None:
            pair = clients.client(user, ("agents",))
            mount.write_keys({"kubeconfig": kubeconfig, "ca.crt": server_side.ca,
                              "tls.crt": pair.cert, "tls.key": pair.key})  # fmt: skip

        mount_certificate("agent-first")
        source = KubeconfigSource(mount.path)
        source.current().request("GET", "/version")
        assert source.current() is source.current(), "nothing changed: the same client"
        mount_certificate("agent-rotated")
        with caplog.at_level(logging.INFO, logger="controller.kube.kubeconfig"):
            source.current().request("GET", "/version")
        source.close()
    assert [r.user for r in hub.audit] == ["agent-first", "agent-rotated"]
    assert len([r for r in caplog.records if "reloaded" in r.getMessage()]) == 1


@pytest.mark.parametrize(
    ("content", "kubectl_says"),
    [
        (INSECURE_WITH_CA, "specifying a root certificates file with the insecure flag is not"),
        (MISSING_TOKEN_FILE, "nowhere/token: no such file or directory"),
    ],
    ids=["insecure-with-ca", "missing-token-file"],
)
def test_kubectl_refuses_what_the_loader_refuses(
    tmp_path: Path, content: str, kubectl_says: str
) -> None:
    """The real kubectl is the reference: for an https server it refuses these kubeconfigs
    before any request, as the loader does."""
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    path = tmp_path / "kubeconfig"
    path.write_text(content, encoding="utf-8")
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(path), "get", "--raw", "/version"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert kubectl_says in done.stderr
    with pytest.raises(KubeconfigError):
        KubeconfigSource(path)


def test_an_exec_command_with_a_path_is_relative_to_the_kubeconfig_as_client_go_resolves_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "bin").mkdir()
    exec_plugin(tmp_path / "bin", token=TOKEN)  # bin/credential-plugin
    path = tmp_path / "kubeconfig"
    with APIServer([], tokens={TOKEN: UserInfo("agent")}) as server:
        path.write_text(
            kubeconfig_yaml(server=server.url, token=TOKEN).replace(
                f"token: {TOKEN}",
                "exec: {command: ./bin/credential-plugin, "
                "apiVersion: client.authentication.k8s.io/v1}",
            ),
            encoding="utf-8",
        )
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        monkeypatch.chdir(elsewhere)  # not the kubeconfig's directory
        source = KubeconfigSource(path)
        assert source.current().request("GET", "/version").status == 200
        source.close()
        assert [record.user for record in server.audit] == ["agent"]


def test_kubeconfig_files_are_merged_as_kubectl_merges_them(tmp_path: Path) -> None:
    """`KUBECONFIG=a:gone:b`: the first file to set current-context wins, and of each cluster,
    user and context name the first file's; relative paths (a CA, a token file) resolve
    against their own file's directory; a missing file is skipped. The real kubectl, given the
    same list from another directory, is the reference: it must reach the server (over TLS:
    kubectl sends no token over plain http) as the same user."""
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    authority = Authority("hub")
    write_whole(first / "ca.crt", authority.ca)
    (second / "token").write_text(TOKEN, encoding="utf-8")
    cert, key = authority.server().write(tmp_path, "apiserver")
    tls = ServingTLS(cert, key)
    with APIServer([], tokens={TOKEN: UserInfo("agent"), "wrong": UserInfo("impostor")},
                   tls=tls) as server:  # fmt: skip
        (first / "config").write_text(yaml.safe_dump({
            "current-context": "edge",
            "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "agent"}}],
            "clusters": [{"name": "edge", "cluster": {"server": server.url,
                                                      "certificate-authority": "ca.crt"}}],
        }), encoding="utf-8")  # fmt: skip
        (second / "config").write_text(yaml.safe_dump({
            "current-context": "elsewhere",
            "contexts": [{"name": "edge", "context": {"cluster": "edge", "user": "wrong"}}],
            "clusters": [{"name": "edge", "cluster": {"server": "https://127.0.0.1:9"}}],
            "users": [{"name": "agent", "user": {"tokenFile": "token"}},
                      {"name": "wrong", "user": {"token": "wrong"}}],
        }), encoding="utf-8")  # fmt: skip
        files = (first / "config", tmp_path / "gone", second / "config")
        source = KubeconfigSource(files)
        assert source.current().request("GET", "/version").status == 200
        source.close()
        done = subprocess.run(
            [KUBECTL, "get", "--raw", "/version"], capture_output=True, text=True, timeout=60,
            check=False, cwd=tmp_path, env={"KUBECONFIG": ":".join(map(str, files))},
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert [record.user for record in server.audit] == ["agent", "agent"]


def test_kubeconfig_files_name_every_file_when_none_exists(tmp_path: Path) -> None:
    files = (tmp_path / "a", tmp_path / "b")
    with pytest.raises(KubeconfigError, match="none of the kubeconfig files exists") as caught:
        KubeconfigSource(files)
    assert f"{files[0]}:{files[1]}" in str(caught.value)
    assert kubeconfig_files(f"{files[0]}::{files[1]}:{files[0]}") == files  # as kubectl reads it


def test_impersonation_is_sent_as_kubectl_sends_it(tmp_path: Path) -> None:
    """`as`, `as-uid`, `as-groups` and `as-user-extra` become the Impersonate-* headers the real
    kubectl sends for the same kubeconfig (names compared without case, as HTTP reads them and
    kube-apiserver lowercases an extra's key)."""
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    seen: list[list[tuple[str, str]]] = []

    class Recorder(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            seen.append(sorted((k.lower(), v) for k, v in self.headers.items()
                               if k.lower().startswith("impersonate-")))  # fmt: skip
            body = b'{"major":"1","minor":"36","gitVersion":"v1.36.0"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    user = {"token": TOKEN, "as": "jane", "as-uid": "42", "as-groups": ["dev", "ops"],
            "as-user-extra": {"scopes.example.com/x y": ["a", "b"]}}  # fmt: skip
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
        "users": [{"name": "u", "user": user}],
    }), encoding="utf-8")  # fmt: skip
    try:
        done = subprocess.run(
            [KUBECTL, "--kubeconfig", str(path), "get", "--raw", "/version"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        source = KubeconfigSource(path)
        assert source.current().request("GET", "/version").status == 200
        source.close()
    finally:
        server.shutdown()
        server.server_close()
    kubectl, ours = seen
    assert ours == kubectl
    assert ("impersonate-group", "ops") in ours and ("impersonate-user", "jane") in ours
