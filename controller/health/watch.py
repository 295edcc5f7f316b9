"""List-and-watch of each object a health rule names (section 8), a thread per object.

The same loop as the addon CR's (`controller.spoke.watch`), on `controller.kube.objects`: list
by name, watch from the list's resourceVersion, resume from the last one seen when a watch ends,
list afresh after 410 Gone or a failed request, with backoff. Each list and each event is handed
to `deliver(resource, object or None, resourceVersion)`; the worker judges it, and writes only
when the status changes. A kind the API server does not serve (its CRD not installed yet) is
told once and listed again with backoff until it is served: the resource stays
`Unknown`/`NotFound` meanwhile (the core starts every resource so), never a crash.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from controller.kube.api import GoneError, KubeError, WatchStream, resource_version
from controller.kube.objects import KindNotServedError, ObjectKey, ObjectSource
from controller.ops.backoff import Backoff
from statemachines.health import Resource

__all__ = ["Deliver", "ObjectWatch", "ObjectWatches", "health_watches"]

log = logging.getLogger(__name__)

# (resource name, the object as the API server returns it or None, its resourceVersion)
Deliver = Callable[[str, dict[str, Any] | None, str], None]


class ObjectWatch:
    """List-and-watch on one configured object, on its own thread."""

    def __init__(
        self,
        resource: str,
        source: ObjectSource,
        deliver: Deliver,
        *,
        watch_seconds: int = 300,
        backoff: Backoff | None = None,
    ) -> None:
        self.resource = resource
        self._source = source
        self._deliver = deliver
        self._watch_seconds = watch_seconds
        self._backoff = backoff or Backoff()
        self._stopping = threading.Event()
        self._stream: WatchStream | None = None
        self._lock = threading.Lock()  # guards _stream between the loop and stop()
        self._thread: threading.Thread | None = None
        self._told: str | None = None  # the failure last logged as a warning

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"health-watch-{self.resource}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        with self._lock:
            if self._stream is not None:
                self._stream.close()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        version: str | None = None
        failures = 0
        while not self._stopping.is_set():
            try:
                if version is None:
                    version = self._list()
                version = self._follow(version)
                failures = 0
                continue
            except GoneError:
                log.info("watch history expired (410 Gone); listing %s again", self._source.key)
                version = None
                continue
            except KindNotServedError as error:
                self._tell(f"{error}; the resource stays Unknown until it is", "kind")
                version = None
            except KubeError as error:
                if self._stopping.is_set():
                    return
                self._tell(f"cannot read {self._source.key}: {error}", "error")
                version = None
            except Exception:  # a bug must not end the watch: start over from a list
                log.exception("the watch on %s failed; listing it again", self._source.key)
                version = None
            failures += 1
            self._stopping.wait(self._backoff.delay(failures))

    def _tell(self, message: str, what: str) -> None:
        """A failure is told once until a list succeeds again."""
        if self._told != what:
            log.warning(message, extra={"resource": self.resource})
            self._told = what

    def _list(self) -> str:
        obj, version = self._source.list()
        if self._told is not None:
            log.info("reading %s again", self._source.key, extra={"resource": self.resource})
            self._told = None
        self._deliver(self.resource, obj, resource_version(obj) if obj else version)
        return version

    def _follow(self, version: str) -> str:
        stream = self._source.watch(version, timeout_seconds=self._watch_seconds)
        with self._lock:
            if self._stopping.is_set():
                return version
            self._stream = stream
        try:
            for event in stream:
                version = resource_version(event.object) or version
                if event.type == "BOOKMARK":
                    continue
                deleted = event.type == "DELETED"
                self._deliver(self.resource, None if deleted else event.object, version)
                if self._stopping.is_set():
                    break
        finally:
            with self._lock:
                self._stream = None
        return version


class ObjectWatches:
    """Every configured object's watch, started and stopped together."""

    def __init__(self, watches: Sequence[ObjectWatch]) -> None:
        self.watches = tuple(watches)

    def start(self) -> None:
        for w in self.watches:
            w.start()

    def stop(self, timeout: float = 5.0) -> None:
        for w in self.watches:
            w.stop(timeout)

    @property
    def alive(self) -> bool:
        return all(w.alive for w in self.watches)


def health_watches(
    resources: Sequence[Resource],
    source: Callable[[ObjectKey], ObjectSource],
    deliver: Deliver,
    *,
    watch_seconds: int = 300,
) -> ObjectWatches:
    """A watch for every configured resource's object; `source` reads one object by key
    (`controller.kube.objects.object_sources` on the real client)."""
    watches = []
    for r in resources:
        ref = r.object
        key = ObjectKey(ref.api_version, ref.kind, ref.namespace or "", ref.name)
        watches.append(ObjectWatch(r.name, source(key), deliver, watch_seconds=watch_seconds))
    return ObjectWatches(watches)
