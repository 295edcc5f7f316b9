"""The project's own connection to an API server (controller/kube/connection.py, what replaced the
`kubernetes` package in every process), against kubesim over real HTTP and TLS as kube-apiserver
answers: a bearer token, a token file the kubelet rotates, an exec credential plugin, a client
certificate (the user of its subject, as the x509 authenticator reads it), the server's
certificate checked against the CA and the name, a proxy with its credentials, the pod's service
account; one retry only where nothing could have been repeated, and no credential in a message."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import proxy
import pytest
import urllib3

from controller.kube.api import CONFIG_MAP, KubeError
from controller.kube.connection import Connection, ConnectionSetupError
from controller.kube.kubeconfig import client_for
from controller.kube.proxy import proxy_for
from controller.kube.rest import RestKube
from kubesim import APIServer, ServingTLS, UserInfo
from statemachines.errors import AddonStatusError
from tests.certificates import Authority, write_whole
from tests.kube.credential_plugin import exec_plugin
from tests.kube.mount import SecretMount
from tests.support import eventually

pytestmark = pytest.mark.integration
TOKEN, OTHER = "s3cr3t-token-value", "0ther-token-value"
TOKENS = {TOKEN: UserInfo("agent"), OTHER: UserInfo("rotated-agent")}
VIA = "http://proxy:3128"  # HTTPS_PROXY in the NO_PROXY cases, without a scheme there


def running(pid: int) -> bool:
    """Whether process `pid` runs (a zombie waiting to be reaped does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def users(server: APIServer) -> list[str]:
    return [record.user for record in server.audit]


@pytest.fixture
def server() -> Iterator[APIServer]:
    with APIServer([], tokens=TOKENS) as served:
        yield served


@pytest.fixture(scope="module")
def forward_proxy() -> Iterator[int]:
    """A real forward proxy (absolute-URI requests and CONNECT tunnels) that demands basic
    auth `proxy-user:proxy-pass`; its port."""
    flags = ["--hostname", "127.0.0.1", "--port", "0", "--num-workers", "1",
             "--num-acceptors", "1", "--basic-auth", "proxy-user:proxy-pass",
             "--log-level", "WARNING"]  # fmt: skip
    with proxy.Proxy(flags) as running:
        yield int(running.flags.port)


class TestCredentials:
    def test_a_bearer_token_is_the_user_it_names(self, server: APIServer) -> None:
        with Connection(server.url, token=TOKEN) as connection:
            assert connection.request("GET", "/api/v1/namespaces").status == 200
        with Connection(server.url) as anonymous:
            assert anonymous.request("GET", "/api/v1/namespaces").status == 401
        assert users(server) == ["agent", ""]

    def test_a_token_file_is_read_again_when_the_kubelet_rotates_it(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        mount = SecretMount(tmp_path / "serviceaccount", key="token")
        mount.write(TOKEN)
        with Connection(server.url, token_file=mount.path) as connection:
            connection.request("GET", "/version")
            connection.request("GET", "/version")
            mount.write(OTHER)
            connection.request("GET", "/version")
        assert users(server) == ["agent", "agent", "rotated-agent"]

    def test_an_exec_plugin_runs_once_until_its_credential_expires_or_is_refused(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        runs = tmp_path / "runs"
        plugin = exec_plugin(tmp_path, token=TOKEN, expires="2999-01-01T00:00:00Z", runs=runs)
        with Connection(server.url, exec_plugin=plugin) as connection:
            connection.request("GET", "/version")
            connection.request("GET", "/version")
            assert len(runs.read_text().splitlines()) == 1, "a valid credential is kept"
            connection.forget_credential()  # what the seam does on a 401
            connection.request("GET", "/version")
        seen = [json.loads(line) for line in runs.read_text().splitlines()]
        assert len(seen) == 2
        # client-go's KUBERNETES_EXEC_INFO: the plugin is told it has no terminal.
        assert seen[0]["spec"] == {"interactive": False}
        assert seen[0]["apiVersion"] == "client.authentication.k8s.io/v1"
        assert users(server) == ["agent"] * 3

    def test_an_expired_exec_credential_is_fetched_again(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        runs = tmp_path / "runs"
        plugin = exec_plugin(tmp_path, token=TOKEN, expires="2001-01-01T00:00:00Z", runs=runs)
        with Connection(server.url, exec_plugin=plugin) as connection:
            connection.request("GET", "/version")
            connection.request("GET", "/version")
        assert len(runs.read_text().splitlines()) == 2

    def test_a_failing_exec_plugin_is_named_with_what_it_said_but_no_credential(
        self, server: APIServer, tmp_path: Path, capfd: pytest.CaptureFixture[str]
    ) -> None:
        jwt = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhZ2VudCJ9.c2lnbmF0dXJl"
        plugin = exec_plugin(
            tmp_path, token=TOKEN, exit_code=3,
            complaint=f"the session expired: run `cloud login` (last {jwt})",
        )  # fmt: skip
        with (
            Connection(server.url, exec_plugin=plugin) as connection,
            pytest.raises(ConnectionSetupError, match="exited with 3") as caught,
        ):
            connection.request("GET", "/version")
        message = str(caught.value)
        assert plugin.command in message
        assert "the session expired: run `cloud login`" in message
        assert TOKEN not in message
        assert jwt not in message
        assert jwt in capfd.readouterr().err, "passed on to stderr, as client-go does"
        assert server.audit == [], "no request without a credential"

    @pytest.mark.slow
    def test_a_stalled_exec_plugin_ends_with_the_call_naming_it_and_its_children(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        """A plugin that never answers holds a call no longer than its --request-timeout as a
        whole: the call fails naming the plugin (not the API server), and the plugin is killed
        with the children it started (its own process group)."""
        child = tmp_path / "child.pid"
        plugin = exec_plugin(tmp_path, token=TOKEN, stall=child)
        kube = RestKube(Connection(server.url, exec_plugin=plugin), request_timeout=3.0)
        with pytest.raises(KubeError) as caught:
            kube.get(CONFIG_MAP, "default", "settings")
        assert plugin.command in str(caught.value) and "API server" not in str(caught.value)
        pid = int(child.read_text())
        eventually(lambda: not running(pid), what="the plugin's child killed")
        assert server.audit == []

    def test_an_exec_plugin_gets_its_args_env_version_and_the_cluster_it_asked_for(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        """The ExecCredential contract as client-go keeps it: `args` and `env` given, the
        `apiVersion` asked for answered (v1beta1 too), and `spec.cluster` only with
        provideClusterInfo."""
        runs = tmp_path / "runs"
        made = exec_plugin(tmp_path, token=TOKEN, runs=runs)
        for version, provide in (("v1beta1", True), ("v1", False)):
            plugin = replace(
                made, args=("--region", "eu"), env=(("REGION", "eu-1"),),
                api_version=f"client.authentication.k8s.io/{version}", provide_cluster_info=provide,
            )  # fmt: skip
            with Connection(
                server.url, exec_plugin=plugin, server_name="hub.example"
            ) as connection:
                assert connection.request("GET", "/version").status == 200
        with_cluster, without = (json.loads(line) for line in runs.read_text().splitlines())
        assert with_cluster["apiVersion"] == "client.authentication.k8s.io/v1beta1"
        assert with_cluster["spec"]["cluster"] == {
            "server": server.url,
            "tls-server-name": "hub.example",
        }
        assert "cluster" not in without["spec"]
        assert with_cluster["argv"] == ["--region", "eu"] and with_cluster["region"] == "eu-1"
        assert users(server) == ["agent", "agent"]

    def test_an_exec_plugin_that_needs_a_terminal_is_refused_naming_why(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        plugin = replace(exec_plugin(tmp_path, token=TOKEN), interactive_mode="Always")
        with (
            Connection(server.url, exec_plugin=plugin) as connection,
            pytest.raises(ConnectionSetupError, match=r"needs a terminal \(interactiveMode"),
        ):
            connection.request("GET", "/version")
        assert server.audit == []

    @pytest.mark.parametrize(
        ("made", "problem"),
        [
            ({"expires": "2999-01-01T00:00:00"}, "expirationTimestamp is not an RFC 3339 time"),
            (
                {"certificate": (b"-----BEGIN CERTIFICATE-----", b"-----BEGIN PRIVATE KEY-----")},
                "returned a client certificate, which needs an https server",
            ),
        ],
        ids=["zone-less-expiry", "client-certificate-over-http"],
    )
    def test_an_exec_credential_this_client_cannot_use_is_refused_naming_why(
        self, server: APIServer, tmp_path: Path, made: dict[str, Any], problem: str
    ) -> None:
        plugin = exec_plugin(tmp_path, token=TOKEN, **made)
        with (
            Connection(server.url, exec_plugin=plugin) as connection,
            pytest.raises(ConnectionSetupError, match=problem) as caught,
        ):
            connection.request("GET", "/version")
        assert TOKEN not in str(caught.value)
        assert server.audit == [], "no request with a credential that cannot be read"

    def test_a_token_with_a_line_break_is_refused_before_it_splits_a_header(
        self, server: APIServer, tmp_path: Path
    ) -> None:
        mount = SecretMount(tmp_path / "serviceaccount", key="token")
        mount.write(f"{TOKEN}\nImpersonate-User: system:admin")
        with (
            Connection(server.url, token_file=mount.path) as connection,
            pytest.raises(ConnectionSetupError, match="line break") as caught,
        ):
            connection.request("GET", "/version")
        assert TOKEN not in str(caught.value)
        assert server.audit == []

    def test_nothing_shows_a_credential(self) -> None:
        connection = Connection(
            "https://127.0.0.1:6443", token=TOKEN, proxy=f"http://u:{OTHER}@127.0.0.1:3128"
        )
        assert TOKEN not in repr(connection)
        assert OTHER not in repr(connection)


class TestTLS:
    """kubesim serving TLS with `--client-ca-file`, as kube-apiserver: the client checks the
    server's certificate against its CA and the name it connects to, and may prove itself with
    a certificate whose subject is the user."""

    @pytest.fixture
    def authority(self) -> Authority:
        return Authority("hub")

    def served(self, authority: Authority, tmp_path: Path, dns_name: str | None = None) -> Any:
        cert, key = authority.server(dns_name).write(tmp_path, "apiserver")
        ca = write_whole(tmp_path / "client-ca.crt", authority.ca)
        return APIServer([], tokens=TOKENS, tls=ServingTLS(cert, key, client_ca_file=ca))

    def test_a_client_certificate_in_memory_is_its_subject_and_leaves_no_file(
        self, authority: Authority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        scratch = tmp_path / "tmp"
        scratch.mkdir()
        monkeypatch.setenv("TMPDIR", str(scratch))
        pair = authority.client("system:open-cluster-management:cluster:c1:addon:a", ("g",))
        with self.served(authority, tmp_path) as server:
            connection = Connection(
                server.url, ca_data=authority.ca, cert_data=pair.cert, key_data=pair.key
            )
            with connection:
                assert connection.request("GET", "/version").status == 200
        assert users(server) == ["system:open-cluster-management:cluster:c1:addon:a"]
        assert list(scratch.iterdir()) == [], "the key went through a file that is gone"

    def test_an_exec_plugins_client_certificate_is_its_subject(
        self, authority: Authority, tmp_path: Path
    ) -> None:
        """An ExecCredential with clientCertificateData and clientKeyData instead of a token:
        the connection presents that certificate (client-go's transport does so), and runs
        the plugin again, with the next certificate, once the server refuses it (401)."""
        runs = tmp_path / "runs"
        pair = authority.client("plugin-cert-user", ("team",))
        plugin = exec_plugin(tmp_path, token="", certificate=(pair.cert, pair.key), runs=runs)
        with (
            self.served(authority, tmp_path) as server,
            Connection(server.url, ca_data=authority.ca, exec_plugin=plugin) as connection,
        ):
            assert connection.request("GET", "/version").status == 200
            connection.forget_credential()
            assert connection.request("GET", "/version").status == 200
        assert users(server) == ["plugin-cert-user"] * 2
        assert len(runs.read_text().splitlines()) == 2

    def test_a_server_signed_by_another_authority_is_not_trusted(
        self, authority: Authority, tmp_path: Path
    ) -> None:
        with self.served(authority, tmp_path) as server:
            stranger = Authority("elsewhere").ca
            with (
                Connection(server.url, token=TOKEN, ca_data=stranger) as connection,
                pytest.raises(urllib3.exceptions.MaxRetryError, match="CERTIFICATE_VERIFY"),
            ):
                connection.request("GET", "/version", timeout=2.0)
            with (
                Connection(server.url, token=TOKEN, insecure=True) as skipping,
                pytest.warns(urllib3.exceptions.InsecureRequestWarning),  # logged once by `run`
            ):
                assert skipping.request("GET", "/version").status == 200
        assert users(server) == ["agent"], "only the insecure-skip-tls-verify request got in"

    def test_tls_server_name_is_the_name_the_certificate_must_carry(
        self, authority: Authority, tmp_path: Path
    ) -> None:
        with self.served(authority, tmp_path, dns_name="api.hub.example") as server:
            by_address = Connection(server.url, token=TOKEN, ca_data=authority.ca)
            with by_address, pytest.raises(urllib3.exceptions.MaxRetryError, match="mismatch"):
                by_address.request("GET", "/version", timeout=2.0)
            named = Connection(
                server.url, token=TOKEN, ca_data=authority.ca, server_name="api.hub.example"
            )
            with named:
                assert named.request("GET", "/version").status == 200

    def test_a_ca_that_does_not_load_is_a_configuration_error(self, tmp_path: Path) -> None:
        with pytest.raises(ConnectionSetupError, match="TLS settings do not load"):
            Connection("https://127.0.0.1:6443", ca_data=b"-----BEGIN CERTIFICATE-----\nnope")

    def test_the_pods_service_account_is_used_in_a_cluster(
        self, authority: Authority, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """client-go's in-cluster configuration: the API server's Service from the
        environment, the projected token (read again after the kubelet rotates it), its CA."""
        mount = SecretMount(tmp_path / "serviceaccount", key="token")
        mount.write(TOKEN)
        write_whole(mount.root / "ca.crt", authority.ca)
        monkeypatch.setattr("controller.kube.kubeconfig.SERVICE_ACCOUNT", mount.root)
        with self.served(authority, tmp_path) as server:
            environ = {"KUBERNETES_SERVICE_HOST": "127.0.0.1",
                       "KUBERNETES_SERVICE_PORT": str(server.port)}  # fmt: skip
            with client_for(None, environ=environ) as connection:
                connection.request("GET", "/version")
                mount.write(OTHER)
                connection.request("GET", "/version")
        assert users(server) == ["agent", "rotated-agent"]

    def test_outside_a_pod_the_in_cluster_configuration_says_what_is_missing(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with pytest.raises(AddonStatusError, match="KUBERNETES_SERVICE_HOST"):
            client_for(None, environ={})
        monkeypatch.setattr("controller.kube.kubeconfig.SERVICE_ACCOUNT", tmp_path)
        environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}
        with pytest.raises(AddonStatusError, match=f"no service account token at {tmp_path}"):
            client_for(None, environ=environ)


class TestProxy:
    def test_a_proxy_url_carries_plain_requests_with_its_credentials(
        self, server: APIServer, forward_proxy: int
    ) -> None:
        through = f"http://proxy-user:proxy-pass@127.0.0.1:{forward_proxy}"
        with Connection(server.url, token=TOKEN, proxy=through) as connection:
            assert connection.request("GET", "/version").status == 200
        refused = f"http://127.0.0.1:{forward_proxy}"
        with Connection(server.url, token=TOKEN, proxy=refused) as connection:
            assert connection.request("GET", "/version").status == 407  # the proxy's answer
        assert users(server) == ["agent"]

    def test_a_proxy_url_tunnels_tls(self, forward_proxy: int, tmp_path: Path) -> None:
        authority = Authority("hub")
        cert, key = authority.server().write(tmp_path, "apiserver")
        through = f"http://proxy-user:proxy-pass@127.0.0.1:{forward_proxy}"
        tls = ServingTLS(cert, key)
        with APIServer([], tokens=TOKENS, tls=tls) as server:
            connection = Connection(server.url, token=TOKEN, ca_data=authority.ca, proxy=through)
            with connection:
                assert connection.request("GET", "/version").status == 200
        assert users(server) == ["agent"]

    def test_the_environment_proxy_is_taken_when_no_proxy_url_is_set(
        self, forward_proxy: int, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A server that is not loopback goes through HTTP_PROXY: the proxy's own 407 (this
        one demands credentials the variable does not carry) shows the request reached it;
        a direct request could not even resolve the name."""
        monkeypatch.setenv("HTTP_PROXY", f"127.0.0.1:{forward_proxy}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        with Connection("http://api.hub.example:6443") as connection:
            assert connection.request("GET", "/version", timeout=5.0).status == 407

    @pytest.mark.parametrize(
        ("server", "no_proxy", "expected"),
        [
            pytest.param("https://api.hub.example", "", VIA, id="https-proxy"),
            pytest.param("http://api.hub.example", "", "http://plain:3128", id="http-proxy"),
            pytest.param("https://127.0.0.1:6443", "", None, id="loopback-direct"),
            pytest.param("https://localhost:6443", "", None, id="localhost-direct"),
            pytest.param("https://10.96.0.1", "10.0.0.0/8", None, id="cidr"),
            pytest.param("https://10.96.0.1", "192.168.0.0/16", VIA, id="other-cidr"),
            pytest.param("https://api.hub.example", "hub.example", None, id="subdomain"),
            pytest.param("https://hub.example", "hub.example", None, id="domain-itself"),
            pytest.param("https://hub.example", ".hub.example", VIA, id="dot-not-itself"),
            pytest.param("https://api.hub.example", ".hub.example", None, id="dot-subdomain"),
            pytest.param("https://a.hub:6443", "a.hub:443", VIA, id="other-port"),
            pytest.param("https://a.hub:6443", "a.hub:6443", None, id="same-port"),
            pytest.param("https://nothub.example", "hub.example", VIA, id="not-a-suffix"),
            pytest.param("https://api.hub.example", " x.example , * ", None, id="star"),
            pytest.param("https://[fd00::1]:6443", "fd00::/8", None, id="ipv6-cidr"),
        ],
    )  # fmt: skip
    def test_no_proxy_is_read_as_client_go_reads_it(
        self, server: str, no_proxy: str, expected: str | None
    ) -> None:
        environ = {"https_proxy": "proxy:3128", "HTTP_PROXY": "http://plain:3128",
                   "NO_PROXY": no_proxy}  # fmt: skip
        assert proxy_for(server, None, environ) == expected

    def test_the_kubeconfigs_proxy_url_wins_over_the_environment(self) -> None:
        environ = {"HTTPS_PROXY": "http://env:3128", "NO_PROXY": "*"}
        assert proxy_for("https://hub", "http://set:8080", environ) == "http://set:8080"

    def test_a_socks_proxy_is_refused_without_quoting_it(self) -> None:
        with pytest.raises(ConnectionSetupError, match="socks") as caught:
            Connection("https://hub:6443", proxy=f"socks5://u:{TOKEN}@proxy:1080")
        assert TOKEN not in str(caught.value)


class TestRetries:
    def test_a_pooled_connection_the_server_closed_is_tried_once_more(
        self, server: APIServer
    ) -> None:
        """kube-apiserver restarts (or an idle timeout closes a keep-alive connection): the
        next request goes through on a new connection, once."""
        with Connection(server.url, token=TOKEN) as connection:
            connection.request("GET", "/version")
            server.stop()
            server.start()
            assert connection.request("GET", "/version").status == 200
        assert users(server) == ["agent", "agent"]

    def test_a_429_is_the_callers_with_its_retry_after(self, server: APIServer) -> None:
        """Max-in-flight or API priority and fairness throttling: the answer goes to the
        seam's callers, whose backoff honours Retry-After; this layer does not repeat it."""
        server.faults.fail_next(1, 429, retry_after=3)
        with Connection(server.url, token=TOKEN) as connection:
            answer = connection.request("GET", "/api/v1/namespaces")
        assert (answer.status, answer.headers["Retry-After"]) == (429, "3")
        assert len(server.audit) == 1

    def test_a_server_that_is_gone_fails_fast(self) -> None:
        with APIServer([]) as gone:
            url = gone.url
        with Connection(url) as connection, pytest.raises(urllib3.exceptions.HTTPError):
            connection.request("GET", "/version", timeout=2.0)
