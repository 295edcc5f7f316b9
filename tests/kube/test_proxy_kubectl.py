"""`NO_PROXY` as kubectl reads it (Go's `httpproxy`, and client-go's own pass over its CIDR
blocks), with the real kubectl as the reference: for each case kubectl and the seam's
`Connection` make one request in the same environment, and a listener that is both the proxy
and (on 0.0.0.0 and ::, which this machine connects to itself without them being loopback
addresses, which go direct whatever the variables say) the server records whether each came
through the proxy (a `CONNECT`, or an absolute URI over plain http) or not."""

from __future__ import annotations

import contextlib
import socket
import socketserver
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import urllib3
import yaml

from controller.kube.connection import Connection
from tests.support import KUBECTL

pytestmark = pytest.mark.integration
TOKEN = "s3cr3t-token-value"


class Listener(socketserver.ThreadingTCPServer):
    """Answers a proxy's request with 403 and anything else by closing; `proxied` says whether
    any request since `clear()` came as a proxy's."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        self.address_family = socket.AF_INET6 if socket.has_ipv6 else socket.AF_INET
        self.seen: list[bytes] = []
        super().__init__(("::" if socket.has_ipv6 else "0.0.0.0", 0), Handler)

    def server_bind(self) -> None:
        if self.address_family == socket.AF_INET6:  # IPv4 too, as ::ffff:a.b.c.d
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    def proxied(self) -> bool:
        return any(line.startswith((b"CONNECT ", b"GET http://")) for line in self.seen)


class Handler(socketserver.StreamRequestHandler):
    server: Listener

    def handle(self) -> None:
        first = self.rfile.readline(512)
        self.server.seen.append(first)  # before answering: the client waits for the answer
        if first.startswith((b"CONNECT ", b"GET http://")):
            self.wfile.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    with Listener() as serving:
        threading.Thread(target=serving.serve_forever, daemon=True).start()
        yield serving
        serving.shutdown()


def kubectl_proxied(server: str, environ: dict[str, str], listener: Listener, home: Path) -> bool:
    assert KUBECTL is not None, "kubectl: pip install -e '.[test]' installs it"
    config = home / "kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
    }), encoding="utf-8")  # fmt: skip
    listener.seen.clear()
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(config), "--request-timeout=20s", "get", "--raw", "/version"],
        env={"HOME": str(home), **environ}, capture_output=True, text=True, timeout=60,
        check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode != 0  # the listener serves no API: only the way matters
    return listener.proxied()


def seam_proxied(
    server: str, environ: dict[str, str], listener: Listener, monkeypatch: pytest.MonkeyPatch
) -> bool:
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    listener.seen.clear()
    connection = Connection(server, token=TOKEN, insecure=server.startswith("https"))
    with connection, contextlib.suppress(urllib3.exceptions.HTTPError):  # it serves no API
        connection.request("GET", "/version", timeout=20.0)
    return listener.proxied()


NAMED = "https://api.hub.example"  # never resolved when proxied; direct, it does not resolve
HUB = "https://hub.example"


@pytest.mark.parametrize(
    ("server", "no_proxy"),
    [
        pytest.param(NAMED, "", id="no-entries"),
        pytest.param(NAMED, "*", id="star"),
        pytest.param(NAMED, " x.example , * ", id="star-among-others"),
        pytest.param(NAMED, "hub.example", id="domain-subdomain"),
        pytest.param(HUB, "hub.example", id="domain-itself"),
        pytest.param("https://nothub.example", "hub.example", id="domain-not-a-suffix"),
        pytest.param(NAMED, ".hub.example", id="dot-subdomain"),
        pytest.param(HUB, ".hub.example", id="dot-not-itself"),
        pytest.param(NAMED, "*.hub.example", id="star-dot-subdomain"),
        pytest.param(HUB, "*.hub.example", id="star-dot-not-itself"),
        pytest.param(NAMED, "*.HUB.Example", id="star-dot-any-case"),
        pytest.param(NAMED, ".example", id="dot-parent"),
        pytest.param(NAMED, "ub.example", id="not-at-a-dot"),
        pytest.param(f"{NAMED}:6443", "*.hub.example:6443", id="star-dot-same-port"),
        pytest.param(f"{NAMED}:6443", "*.hub.example:443", id="star-dot-other-port"),
        pytest.param(f"{NAMED}:6443", "hub.example:", id="empty-port"),
        pytest.param("http://api.hub.example", ".hub.example", id="http-dot"),
        pytest.param("http://api.hub.example", "", id="http-proxied"),
        pytest.param("https://0.0.0.0:{port}", "0.0.0.0/8", id="cidr"),
        pytest.param("https://0.0.0.0:{port}", "10.0.0.0/8", id="other-cidr"),
        pytest.param("https://0.0.0.0:{port}", "000.0.0.0/8", id="cidr-leading-zeros"),
        pytest.param("https://0.0.0.0:{port}", "0.0.0.0/255.0.0.0", id="netmask-not-cidr"),
        pytest.param("https://0.0.0.0:{port}", "0.0.0.0", id="address"),
        pytest.param("https://0.0.0.0:{port}", "0.0.0.0:{port}", id="address-same-port"),
        pytest.param("https://0.0.0.0:{port}", "0.0.0.0:1", id="address-other-port"),
        pytest.param("https://0.0.0.0:{port}", "::ffff:0.0.0.0", id="mapped-entry"),
        pytest.param("https://0.0.0.0:{port}", "::ffff:0.0.0.0/104", id="mapped-cidr"),
        pytest.param("https://0.0.0.0:{port}", "::ffff:0:0/96", id="mapped-cidr-all-ipv4"),
        pytest.param("https://0.0.0.0:{port}", "::ffff:0.0.0.0/8", id="mapped-cidr-short"),
        pytest.param("https://[::ffff:0.0.0.0]:{port}", "0.0.0.0/8", id="mapped-host-cidr"),
        pytest.param("https://[::ffff:0.0.0.0]:{port}", "0.0.0.0", id="mapped-host-address"),
        pytest.param("https://[::ffff:0.0.0.0]:{port}", ".0.0.0.0", id="mapped-host-dot"),
        pytest.param("https://[::ffff:127.0.0.1]:{port}", "", id="mapped-loopback"),
        pytest.param("https://[::]:{port}", "::/8", id="ipv6-cidr"),
        pytest.param("https://[::]:{port}", "::", id="ipv6-address"),
        pytest.param("https://[::]:{port}", "[::]:{port}", id="ipv6-address-port"),
        pytest.param("https://[::]:{port}", "[::]", id="ipv6-brackets-no-port"),
        pytest.param("https://[::]:{port}", "0.0.0.0/0", id="ipv4-cidr-not-ipv6"),
        pytest.param("https://LOCALHOST:{port}", "", id="localhost-in-capitals"),
        pytest.param("https://api.hub.example:06443", "api.hub.example:6443", id="port-as-written"),
    ],
)  # fmt: skip
def test_no_proxy_is_read_as_kubectl_reads_it(
    server: str,
    no_proxy: str,
    listener: Listener,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server, no_proxy = server.format(port=listener.port), no_proxy.format(port=listener.port)
    via = f"http://127.0.0.1:{listener.port}"
    environ = {"HTTPS_PROXY": via, "HTTP_PROXY": via, "NO_PROXY": no_proxy}
    expected = kubectl_proxied(server, environ, listener, tmp_path)
    assert seam_proxied(server, environ, listener, monkeypatch) == expected
