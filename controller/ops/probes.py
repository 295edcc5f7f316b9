"""`/healthz` and `/readyz` on a port of their own, as controller-runtime serves them.

Liveness asks "should the kubelet restart me?" (a thread that died, a loop stuck in one sync);
readiness asks "should the Service send me reports?" (the CR was read, the worker runs, this
replica leads). Keeping the probes off the metrics port means a scrape never competes with a
probe, and prometheus-client's server, which answers every path with metrics, cannot make a
dead controller look healthy. The body lists each check the way kube-apiserver does
(`[+]worker ok`, `[-]leader failed`), with the cause when the check gives one
(`[-]worker failed: reconcile-worker died (RuntimeError)`).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from controller.ops.serving import BoundedPool, ServerThread

__all__ = ["Check", "ProbeServer", "probe_report"]

log = logging.getLogger(__name__)

Check = Callable[[], bool | str]
"""Passes when it returns True; False fails it, and so does a string, which says why."""


def probe_report(name: str, checks: Mapping[str, Check]) -> tuple[bool, str]:
    """(all passed, the kube-apiserver style body). A check that raises has failed."""
    lines = []
    healthy = True
    for check_name, check in checks.items():
        try:
            result = check()
        except Exception:
            log.exception("probe check %s raised", check_name)
            result = False
        passed = bool(result) and not isinstance(result, str)
        healthy = healthy and passed
        why = f": {result}" if isinstance(result, str) else ""
        lines.append(f"[{'+' if passed else '-'}]{check_name} {'ok' if passed else 'failed'}{why}")
    lines.append(f"{name} check {'passed' if healthy else 'failed'}")
    return healthy, "\n".join(lines) + "\n"


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        assert isinstance(self.server, _Server)
        name = self.path.split("?", 1)[0].strip("/")
        checks = self.server.probes.get(name)
        if checks is None:
            self._answer(404, "not found\n")
            return
        healthy, body = probe_report(name, checks)
        self._answer(
            200 if healthy else 503, body if not healthy or "verbose" in self.path else "ok"
        )

    def _answer(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Probes come every few seconds; their access log is noise."""


class _Server(BoundedPool, HTTPServer):
    workers = 4  # a probe is answered in microseconds; silent connections are reclaimed
    worker_name = "probes-worker"

    def __init__(self, address: tuple[str, int], probes: dict[str, Mapping[str, Check]]) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)
        self.probes = probes


class ProbeServer(ServerThread):
    """Serves `healthz` (liveness) and `readyz` (readiness) checks on `host:port` (0: any)."""

    def __init__(
        self,
        *,
        host: str,
        port: int,
        liveness: Mapping[str, Check],
        readiness: Mapping[str, Check],
    ) -> None:
        self._address = (host, port)
        self._probes: dict[str, Mapping[str, Check]] = {
            "healthz": dict(liveness),
            "readyz": dict(readiness),
        }
        super().__init__("probes", lambda: _Server(self._address, self._probes))
