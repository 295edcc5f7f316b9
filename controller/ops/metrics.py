"""The Prometheus metrics every process shares, and the server that exposes them on their own
port: how each list-then-watch loop is doing (`WatchMetrics`, told by
`controller.kube.reflector`) and each work queue (`WorkQueueMetrics`, client-go's names and
meanings). The spoke's own metrics are `controller.spoke.metrics`, the hub side's
`controller.hub.metrics`."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from controller.kube.reflector import RESTART_CAUSES
from controller.ops.serving import BoundedPool, ServerThread

__all__ = ["MetricsServer", "WatchMetrics", "WorkQueueMetrics"]


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


# client-go's buckets for both durations: 10 ns to 10 s, by tens.
_DURATIONS = tuple(10.0**e for e in range(-8, 2))


class WorkQueueMetrics(Collector):
    """client-go's work-queue metrics, labelled with the queue's `name`: `workqueue_depth`,
    `workqueue_adds_total`, `workqueue_queue_duration_seconds` (added to taken),
    `workqueue_work_duration_seconds` (taken to done), `workqueue_retries_total`,
    `workqueue_unfinished_work_seconds` (the work in progress, summed) and
    `workqueue_longest_running_processor_seconds`."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self._adds = Counter(
            "workqueue_adds", "Adds handled by the work queue", ["name"], registry=registry
        )
        self._retries = Counter(
            "workqueue_retries", "Rate-limited retries handled by the work queue", ["name"],
            registry=registry,
        )  # fmt: skip
        self._waited = Histogram(
            "workqueue_queue_duration_seconds",
            "How long an item stays in the work queue before being taken",
            ["name"], buckets=_DURATIONS, registry=registry,
        )  # fmt: skip
        self._worked = Histogram(
            "workqueue_work_duration_seconds", "How long processing an item takes",
            ["name"], buckets=_DURATIONS, registry=registry,
        )  # fmt: skip
        self._lock = threading.Lock()
        self._queues: dict[str, _Followed] = {}
        registry.register(self)

    def queue(self, name: str) -> _QueueSeries:
        """The series of the queue `name`, every one at zero."""
        return _QueueSeries(self, name)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        depth = GaugeMetricFamily(
            "workqueue_depth", "Current depth of the work queue", labels=["name"]
        )
        unfinished = GaugeMetricFamily(
            "workqueue_unfinished_work_seconds",
            "Seconds of work in progress not yet observed by work_duration; large values "
            "mean stuck threads",
            labels=["name"],
        )
        longest = GaugeMetricFamily(
            "workqueue_longest_running_processor_seconds",
            "Seconds the longest running processor of the work queue has been running",
            labels=["name"],
        )
        with self._lock:
            followed = dict(self._queues)
        for name, (read_depth, in_progress) in sorted(followed.items()):
            running = in_progress()
            depth.add_metric([name], read_depth())
            unfinished.add_metric([name], sum(running))
            longest.add_metric([name], max(running, default=0.0))
        yield from (depth, unfinished, longest)

    def describe(self) -> Iterator[GaugeMetricFamily]:
        return iter(())  # collected anew at each scrape


_Followed = tuple[Callable[[], int], Callable[[], list[float]]]


class _QueueSeries:
    """One queue's series (`controller.kube.workqueue.QueueMetrics`)."""

    def __init__(self, metrics: WorkQueueMetrics, name: str) -> None:
        self._metrics, self._name = metrics, name
        self._adds = metrics._adds.labels(name)
        self._retries = metrics._retries.labels(name)
        self._waited = metrics._waited.labels(name)
        self._worked = metrics._worked.labels(name)

    def follow(self, depth: Callable[[], int], in_progress: Callable[[], list[float]]) -> None:
        with self._metrics._lock:
            self._metrics._queues[self._name] = (depth, in_progress)

    def added(self) -> None:
        self._adds.inc()

    def taken(self, waited: float) -> None:
        self._waited.observe(waited)

    def done(self, worked: float) -> None:
        self._worked.observe(worked)

    def retried(self) -> None:
        self._retries.inc()


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
