"""Which proxy a request to the API server goes through, decided as kubectl decides it (Go's
`golang.org/x/net/http/httpproxy`, behind `http.ProxyFromEnvironment`): the kubeconfig's
`proxy-url` when set; else `HTTPS_PROXY` for an https server and `HTTP_PROXY` for an http one
(upper case first, then lower), unless the server is `localhost` or a loopback address (an
IPv4-mapped one too) or `NO_PROXY` names it. A `NO_PROXY` entry is `*`; a CIDR block (an IPv4
block holds the IPv4-mapped IPv6 addresses of its range, and a mapped block such as
`::ffff:10.0.0.0/104` the IPv4 ones); an IP address, with an optional port (`[v6]:port`), equal
to the server's in either form; or a domain, with an optional port, that matches itself and
its subdomains (a leading `.` or `*.`: its subdomains only; never an IP address).
Python's own `proxy_bypass_environment` knows no CIDR blocks, hence this module;
tests/kube/test_proxy_kubectl.py holds it to the real kubectl.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from urllib.parse import urlsplit

__all__ = ["proxy_for"]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def proxy_for(server: str, configured: str | None, environ: Mapping[str, str]) -> str | None:
    """The proxy URL for requests to `server`, or None to go direct."""
    if configured:
        return configured
    parts = urlsplit(server)
    proxy = _env(environ, f"{parts.scheme}_proxy")
    if not proxy:
        return None
    host, port = _host_port(parts.netloc)
    if _bypassed(host, port or {"https": "443", "http": "80"}.get(parts.scheme, ""),
                 _env(environ, "no_proxy")):  # fmt: skip
        return None
    return proxy if "://" in proxy else f"http://{proxy}"  # Go assumes http


def _env(environ: Mapping[str, str], name: str) -> str:
    return environ.get(name.upper()) or environ.get(name) or ""


def _host_port(netloc: str) -> tuple[str, str]:
    """The host as Go's `url.Hostname()` reads it (its case kept: Go compares `localhost`
    before lowering it) and the port as written."""
    host = netloc.rpartition("@")[2]
    name, colon, port = host.rpartition(":")
    if colon and (port == "" or (port.isascii() and port.isdigit())):
        host = name
    else:
        port = ""
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


def _address(text: str) -> Address | None:
    """An address as Go's `net.ParseIP` reads one (no zone, no brackets), IPv4-mapped IPv6
    addresses as the IPv4 address they map: Go compares and contains them so."""
    if "%" in text:
        return None
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _network(text: str) -> Network | None:
    """A CIDR block as Go's `net.ParseCIDR` reads one (an address, `/` and a prefix length:
    no netmask); an IPv6 block whose network is IPv4-mapped holds those IPv4 addresses, the
    prefix less 96 (Go's `IPNet.Contains`)."""
    address, slash, bits = text.partition("/")
    if not slash or not (bits.isascii() and bits.isdigit()) or "%" in address:
        return None
    try:
        network = ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None
    mapped = getattr(network.network_address, "ipv4_mapped", None)
    if mapped is not None and network.prefixlen >= 96:
        return ipaddress.IPv4Network((mapped, network.prefixlen - 96))
    return network


def _split_host_port(entry: str) -> tuple[str, str] | None:
    """Go's `net.SplitHostPort`: `host:port` or `[host]:port`; None when it refuses."""
    last = entry.rfind(":")
    if last < 0:
        return None
    if entry.startswith("["):
        end = entry.find("]")
        if end < 0 or end + 1 != last:
            return None
        host, after_open, after_close = entry[1:end], 1, end + 1
    else:
        host, after_open, after_close = entry[:last], 0, 0
        if ":" in host:
            return None
    if "[" in entry[after_open:] or "]" in entry[after_close:]:
        return None
    return host, entry[last + 1 :]


def _bypassed(host: str, port: str, no_proxy: str) -> bool:
    address = _address(host)
    if host == "localhost" or (address is not None and address.is_loopback):
        return True
    host = host.strip().lower()
    entries = (raw.strip().lower() for raw in no_proxy.split(","))
    return any(_matches(entry, host, address, port) for entry in entries if entry)


def _matches(entry: str, host: str, address: Address | None, port: str) -> bool:
    """Whether one `NO_PROXY` entry (trimmed, lower case) names the server."""
    if entry == "*":
        return True
    network = _network(entry)
    if network is not None:
        return address is not None and address.version == network.version and address in network
    split = _split_host_port(entry)
    name, entry_port = split or (entry, "")
    if not name or entry_port not in ("", port):
        return False  # `:port` names no host
    listed = _address(name)
    if listed is not None or address is not None:
        return listed == address  # a domain never matches an address
    if name.startswith("*."):
        name = name[1:]
    if name.startswith("."):
        return host.endswith(name)
    return host == name or host.endswith(f".{name}")
