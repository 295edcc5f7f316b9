"""The one list-then-watch loop, as client-go's reflector runs it, under every informer of the
project (`controller.kube.informer`): the addon CR, the objects health rules name, the hub side's
kinds, and `fleet --watch`.

List what is selected, a page at a time (`controller.kube.pager`), each object kept as its reader's
projection (`keep`), and hand it over (`on_listed`); watch from the list's resourceVersion and hand
over each change in order (`on_event`); resume from the last resourceVersion seen when a watch ends,
and list afresh after 410 Gone (that version left the server's history) or after a failed request
(its success is what proves the server is back, and it catches up on what changed meanwhile). A
failed list or watch is handed to `on_failed` and retried with backoff and jitter; a bug in a hook
or in the loop never ends it.

An outage is told once: one warning when the loop loses its objects, one line when a list
succeeds again (how long, how many tries), debug lines in between; `WatchMetrics` follows the
same two moments and counts each restart by cause (`ended`, `gone`, `error`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

from controller.kube.api import (
    ALL_NAMESPACES,
    ApiResource,
    GoneError,
    Keep,
    Kube,
    KubeError,
    WatchEvent,
    WatchStream,
    resource_version,
    whole,
)
from controller.kube.backoff import Backoff
from controller.kube.pager import PAGE, list_all
from controller.kube.reads import Reads
from controller.kube.runnable import Runnable

__all__ = ["RESTART_CAUSES", "ObjectKind", "Reflector", "Selection", "WatchMetrics"]

log = logging.getLogger(__name__)

RESTART_CAUSES: Final = ("ended", "gone", "error")


@dataclass(frozen=True, slots=True)
class ObjectKind:
    """A kind named by its apiVersion and kind, found by discovery at each list (a CRD that is
    not installed yet is a failed list, retried like any)."""

    api_version: str
    kind: str


@dataclass(frozen=True, slots=True)
class Selection:
    """What a reflector follows: the objects of `resource` in `namespace` (ALL_NAMESPACES:
    every one), only the one called `name` if given, only those with the labels of
    `label_selector` if given; each decoded as much as `reads` says."""

    resource: ApiResource | ObjectKind
    namespace: str = ALL_NAMESPACES
    name: str = ""
    label_selector: str = ""
    reads: Reads = "object"

    def __str__(self) -> str:
        where = self.namespace or "every namespace"
        if self.name:
            where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        return f"{self.resource.kind} {where}"

    @property
    def field_selector(self) -> str:
        return f"metadata.name={self.name}" if self.name else ""


class WatchMetrics(Protocol):
    """Where a reflector says how it is doing (`controller.ops.metrics.WatchMetrics`)."""

    def connected(self, watch: str, up: bool) -> None: ...

    def restarted(self, watch: str, cause: str) -> None: ...


Listed = Callable[[list[Any], str], None]


class Reflector:
    """List-then-watch of `selection` through `kube` on a thread of its own, named `name` (the
    thread's, the logs' and the metrics' label).

    `on_listed(kept, resource_version)` gets what `keep` kept of every object a list found
    (all of them: the receiver replaces what it had); `on_event(event)` each ADDED, MODIFIED
    and DELETED after it, in order, whole; `on_failed(error)` each failed list or watch.
    """

    def __init__(
        self,
        kube: Kube,
        selection: Selection,
        *,
        name: str,
        on_listed: Listed,
        on_event: Callable[[WatchEvent], None],
        on_failed: Callable[[KubeError], None] | None = None,
        metrics: WatchMetrics | None = None,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
        keep: Keep[Any] = whole,
        page: int = PAGE,
    ) -> None:
        self.name = name
        self.selection = selection
        self._kube = kube
        self._on_listed = on_listed
        self._on_event = on_event
        self._on_failed = on_failed or (lambda error: None)
        self._metrics = metrics
        self._backoff = backoff or Backoff()
        self._watch_seconds = watch_seconds
        self._keep, self._page = keep, page
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # guards _stream between the loop and stop()
        self._stream: WatchStream | None = None
        self._runner = Runnable(f"watch-{name}", self._run, self._interrupt)
        # Only the loop's thread touches these:
        self._lost_since: float | None = None  # monotonic
        self._tries = 0
        self._up: bool | None = None  # as last told to the metrics

    # --- lifecycle ------------------------------------------------------------------------

    def start(self) -> None:
        self._stopping.clear()
        self._runner.start()

    def stop(self, timeout: float = 5.0) -> None:
        """End the loop and its open watch at once; waits for the thread up to `timeout`."""
        self._runner.stop(timeout)

    def _interrupt(self) -> None:
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()

    @property
    def alive(self) -> bool:
        return self._runner.alive

    def problem(self) -> str | None:
        return self._runner.problem()

    # --- the loop -------------------------------------------------------------------------

    def _run(self) -> None:
        version = ""
        failures = 0  # failed requests (and 410s) in a row: the backoff's exponent
        while not self._stopping.is_set():
            try:
                if not version:
                    version = self._list()
                version = self._follow(version)
                failures = 0
                if not self._stopping.is_set():
                    self._restarted("ended")
                continue
            except GoneError:
                log.info("watch history expired (410 Gone); listing %s again", self.selection)
                version = ""
                failures += 1
                self._restarted("gone")
                if failures == 1:
                    continue  # the server is there: list at once (a second 410 waits)
            except KubeError as error:
                if self._stopping.is_set():
                    return
                version = ""
                failures += 1
                self._lost(f"{error}")
                self._restarted("error")
                self._safely(self._on_failed, error)
            except Exception as error:  # a bug must not end the only watch: list afresh
                version = ""
                failures += 1
                self._lost(f"{type(error).__name__}: {error}", bug=True)
                self._restarted("error")
            self._stopping.wait(self._backoff.delay(failures))

    def _list(self) -> str:
        resource = self._resource()

        def kept(item: dict[str, Any]) -> Any:
            return self._keep(_complete(item, resource)) if self._selected(item) else None

        listing = list_all(
            self._kube, resource, self.selection.namespace, keep=kept,
            field_selector=self.selection.field_selector,
            label_selector=self.selection.label_selector, page=self._page,
            reads=self.selection.reads,
        )  # fmt: skip
        self._on_listed(listing.items, listing.resource_version)
        self._restored()
        return listing.resource_version

    def _follow(self, version: str) -> str:
        """Hand over the events of one watch request; the last resourceVersion seen."""
        stream = self._kube.watch(
            self._resource(),
            self.selection.namespace,
            resource_version=version,
            timeout_seconds=self._watch_seconds,
            field_selector=self.selection.field_selector,
            label_selector=self.selection.label_selector,
            reads=self.selection.reads,
        )
        with self._lock:
            if self._stopping.is_set():
                return version
            self._stream = stream
        try:
            for event in stream:
                version = resource_version(event.object) or version
                if event.type != "BOOKMARK" and self._selected(event.object):
                    self._on_event(event)
                if self._stopping.is_set():
                    break
        finally:
            with self._lock:
                self._stream = None
        return version

    def _resource(self) -> ApiResource:
        wanted = self.selection.resource
        if isinstance(wanted, ApiResource):
            return wanted
        return self._kube.discover(wanted.api_version, wanted.kind)

    def _selected(self, obj: dict[str, Any]) -> bool:
        """A server may ignore a field selector: an object of another name is not ours."""
        if not self.selection.name:
            return True
        return (obj.get("metadata") or {}).get("name") == self.selection.name

    # --- telling --------------------------------------------------------------------------

    def _lost(self, error: str, *, bug: bool = False) -> None:
        """The first failure of an outage is told (a bug with its traceback), retries are
        debug lines."""
        self._tries += 1
        if self._lost_since is not None:
            log.debug("%s still cannot be read", self.selection, extra={"error": error})
            return
        self._lost_since = time.monotonic()
        self._tell_connected(False)
        if bug:
            log.exception("the watch on %s failed; listing it again until it works", self.selection)
        else:
            log.warning(
                "lost the watch on %s; retrying until the API server answers",
                self.selection,
                extra={"error": error, "watch": self.name},
            )

    def _restored(self) -> None:
        """A list succeeded: told once if the loop had lost its objects. The line is logged
        before the metric says so, so whoever sees the gauge also finds the line."""
        if self._lost_since is not None:
            lost, tries = time.monotonic() - self._lost_since, self._tries
            self._lost_since, self._tries = None, 0
            log.info(
                "the watch on %s is restored",
                self.selection,
                extra={"lostSeconds": round(lost, 3), "failedAttempts": tries, "watch": self.name},
            )
        self._tell_connected(True)

    def _tell_connected(self, up: bool) -> None:
        if self._metrics is not None and self._up is not up:
            self._metrics.connected(self.name, up)
        self._up = up

    def _restarted(self, cause: str) -> None:
        if self._metrics is not None:
            self._metrics.restarted(self.name, cause)

    @staticmethod
    def _safely(hook: Callable[[KubeError], None], error: KubeError) -> None:
        try:
            hook(error)
        except Exception:
            log.exception("a reflector's on_failed hook failed")


def _complete(item: dict[str, Any], resource: ApiResource) -> dict[str, Any]:
    """List items may leave out what the collection says; a PUT body must carry them."""
    item.setdefault("apiVersion", resource.api_version)
    item.setdefault("kind", resource.kind)
    return item
