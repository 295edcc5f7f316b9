"""The list-and-watch loop on the one addon CR, on a thread of its own.

The client's `SharedInformer` fails on custom resources, so this is the plain loop client-go's
reflector runs: read the CR (the "list"), watch from its resourceVersion, resume from the last
resourceVersion seen when a watch ends or breaks, read afresh after 410 Gone (that version left
the server's history). Every event goes to `deliver` in order; the worker decides what it means.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from controller.kube.addons import AddonStore
from controller.kube.api import GoneError, KubeError, WatchEvent, WatchStream, resource_version
from controller.ops.backoff import Backoff

__all__ = ["AddonWatch"]

log = logging.getLogger(__name__)


class AddonWatch:
    """List-and-watch on the one CR, on its own thread; `deliver` gets every event in order.

    The list step reads the CR (delivered as `SYNC`) and the collection's resourceVersion; the
    watch starts from there. A watch that ends or breaks resumes from the last resourceVersion
    seen; 410 Gone means that version left the server's history, so the loop lists afresh. A
    missing CR is delivered once as `DELETED`; its creation comes on the watch as `ADDED`.
    Failures in a row wait with backoff and jitter.
    """

    def __init__(
        self,
        store: AddonStore,
        deliver: Callable[[WatchEvent], None],
        *,
        watch_seconds: int = 300,
        backoff: Backoff | None = None,
        on_restart: Callable[[str], None] | None = None,
    ) -> None:
        self._store = store
        self._deliver = deliver
        self._watch_seconds = watch_seconds
        self._backoff = backoff or Backoff()
        self._on_restart = on_restart or (lambda cause: None)
        self._stopping = threading.Event()
        self._stream: WatchStream | None = None
        self._lock = threading.Lock()  # guards _stream between the loop and stop()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="addon-watch", daemon=True)
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
        present = True
        while not self._stopping.is_set():
            try:
                if version is None:
                    present, version = self._list(present)
                version = self._follow(version)
                failures = 0
                if not self._stopping.is_set():
                    self._on_restart("ended")
                continue
            except GoneError:
                log.info("watch history expired (410 Gone); listing the CR again")
                version = None
                self._on_restart("gone")
            except KubeError as error:
                if self._stopping.is_set():
                    return
                log.warning("watch interrupted, resuming", extra={"error": str(error)})
                self._on_restart("error")
            except Exception:
                # A bug must not end the only watch; start over from a fresh list.
                log.exception("watch loop failed; listing the CR again")
                version = None
                self._on_restart("error")
            failures += 1
            self._stopping.wait(self._backoff.delay(failures))

    def _list(self, present: bool) -> tuple[bool, str]:
        """The list step: deliver the CR as it is (or its absence, once); the version to watch
        from. A CR created later arrives on the watch as ADDED."""
        obj, version = self._store.list()
        if obj is not None:
            self._deliver(WatchEvent("SYNC", obj))
        elif present:
            log.warning("the addon CR %s does not exist", self._store.ref)
            self._deliver(WatchEvent("DELETED", {}))
        return obj is not None, version

    def _follow(self, version: str) -> str:
        """Deliver the events of one watch request; the last resourceVersion seen."""
        stream = self._store.watch(version, timeout_seconds=self._watch_seconds)
        with self._lock:
            if self._stopping.is_set():
                return version
            self._stream = stream
        try:
            for event in stream:
                version = resource_version(event.object) or version
                if event.type == "BOOKMARK":
                    continue
                self._deliver(event)
                if self._stopping.is_set():
                    break
        finally:
            with self._lock:
                self._stream = None
        return version
