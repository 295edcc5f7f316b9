"""The Prometheus metrics every process shares, and the server that exposes them on their own
port: how each list-then-watch loop is doing (`WatchMetrics`, told by
`controller.kube.reflector`). The spoke's own metrics are `controller.spoke.metrics`, the hub
side's `controller.hub.metrics`."""

from __future__ import annotations

import socket
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, make_wsgi_app

from controller.kube.reflector import RESTART_CAUSES
from controller.ops.serving import BoundedPool, ServerThread

__all__ = ["MetricsServer", "WatchMetrics"]


class WatchMetrics:
    """`addon_status_watch_connected{watch}` and `addon_status_watch_restarts_total{watch,
    cause}`, for the reflectors of one process; each watch's series exist from `watch(name)`
    on, every cause at zero."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._connected = Gauge(
            "addon_status_watch_connected",
            "1 while the list-and-watch works; 0 from a failed request until a list succeeds again",
            ["watch"],
            registry=registry,
        )
        self._restarts = Counter(
            "addon_status_watch_restarts",
            "Restarts of a list-and-watch, by cause (ended: the server closed it; gone: its "
            "history expired; error: a failed request)",
            ["watch", "cause"],
            registry=registry,
        )

    def watch(self, name: str) -> WatchMetrics:
        """Start the series of the watch `name` at zero; returns self, for a reflector."""
        self._connected.labels(name)
        for cause in RESTART_CAUSES:
            self._restarts.labels(name, cause)
        return self

    def connected(self, watch: str, up: bool) -> None:
        self._connected.labels(watch).set(1 if up else 0)

    def restarted(self, watch: str, cause: str) -> None:
        self._restarts.labels(watch, cause).inc()


class _Server(BoundedPool, WSGIServer):
    workers = 4  # a scrape or two at a time; silent connections are reclaimed
    worker_name = "metrics-worker"


class _Server6(_Server):
    address_family = socket.AF_INET6


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """A scrape every few seconds is not news."""


class MetricsServer(ServerThread):
    """prometheus-client's WSGI app on `host:port` (0: any free port), stoppable at once.

    Its `start_http_server` polls for shutdown every half second and cannot be told otherwise;
    the same app on a server of our own stops in a twentieth of that.
    """

    def __init__(self, registry: CollectorRegistry, *, host: str, port: int) -> None:
        self._registry = registry
        self._host = host
        self._port = port
        super().__init__("metrics", self._build)

    def _build(self) -> WSGIServer:
        return make_server(
            self._host,
            self._port,
            make_wsgi_app(self._registry),
            server_class=_Server6 if ":" in self._host else _Server,
            handler_class=_QuietHandler,
        )
