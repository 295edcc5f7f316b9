"""Which proxy a request to the API server goes through, decided as client-go decides it (Go's
`http.ProxyFromEnvironment`): the kubeconfig's `proxy-url` when set; else `HTTPS_PROXY` for an
https server and `HTTP_PROXY` for an http one (upper case first, then lower), unless the server
is a loopback address or `NO_PROXY` names it. A `NO_PROXY` entry is `*`, an IP address, a CIDR
block (`10.0.0.0/8`: what fleets put there for the service network), or a domain that matches
itself and its subdomains (a leading `.`: its subdomains only), each with an optional port.
Python's own `proxy_bypass_environment` knows no CIDR blocks, hence this module.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["proxy_for"]


def proxy_for(server: str, configured: str | None, environ: Mapping[str, str]) -> str | None:
    """The proxy URL for requests to `server`, or None to go direct."""
    if configured:
        return configured
    parts = urlsplit(server)
    host = (parts.hostname or "").lower()
    port = parts.port or (443 if parts.scheme == "https" else 80)
    if host == "localhost" or _loopback(host) or _bypassed(host, port, _env(environ, "no_proxy")):
        return None
    proxy = _env(environ, f"{parts.scheme}_proxy")
    if not proxy:
        return None
    return proxy if "://" in proxy else f"http://{proxy}"  # Go assumes http


def _env(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name.upper()) or environ.get(name) or ""


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if not entry:
            continue
        if entry == "*":
            return True
        try:
            if ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False):
                return True
            continue
        except ValueError:
            pass  # not an address and a block: a name, maybe with a port
        name, _, entry_port = entry.rpartition(":") if _has_port(entry) else (entry, "", "")
        if entry_port and entry_port != str(port):
            continue
        name = name.strip("[]")
        if name.startswith("."):
            if host.endswith(name):
                return True
        elif host == name or host.endswith(f".{name}"):
            return True
    return False


def _has_port(entry: str) -> bool:
    """`host:port` or `[v6]:port`; a bare IPv6 address has colons but no port."""
    if entry.startswith("["):
        return "]:" in entry
    return entry.count(":") == 1
