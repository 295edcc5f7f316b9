"""The list-and-watch loop on the one addon CR, on a thread of its own.

The client's `SharedInformer` fails on custom resources, so this is the plain loop client-go's
reflector runs: read the CR (the "list"), watch from its resourceVersion, resume from the last
resourceVersion seen when a watch ends, read afresh after 410 Gone (that version left the
server's history) or after a failed request. Every event goes to `deliver` in order; the worker
decides what it means.

An outage of the API server is told once: one warning when the loop loses the CR, one line
when a read succeeds again (with how long it was lost and how many tries it took), never a
line per retry; `on_connected` follows the same two moments, for the metrics.
"""

from __future__ import annotations

import logging
import threading
import time
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
    failed request is followed by a list too, as client-go's reflector does: it catches up on
    what changed meanwhile, and its success is what proves the API server is back (a resumed
    watch on a quiet CR would say nothing for minutes). A missing CR is delivered once as
    `DELETED`; its creation comes on the watch as `ADDED`. Failures in a row wait with backoff
    and jitter.
    """

    def __init__(
        self,
        store: AddonStore,
        deliver: Callable[[WatchEvent], None],
        *,
        watch_seconds: int = 300,
        backoff: Backoff | None = None,
        on_restart: Callable[[str], None] | None = None,
        on_connected: Callable[[bool], None] | None = None,
    ) -> None:
        self._store = store
        self._deliver = deliver
        self._watch_seconds = watch_seconds
        self._backoff = backoff or Backoff()
        self._on_restart = on_restart or (lambda cause: None)
        self._on_connected = on_connected or (lambda connected: None)
        self._outage = _Outage()
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
                    self._restored()
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
                version = None
                self._lost(str(error))
                self._on_restart("error")
            except Exception as error:
                # A bug must not end the only watch; start over from a fresh list.
                version = None
                self._lost(f"{type(error).__name__}: {error}", bug=True)
                self._on_restart("error")
            failures += 1
            self._stopping.wait(self._backoff.delay(failures))

    def _lost(self, error: str, *, bug: bool = False) -> None:
        """The first failure of an outage is told (a bug with its traceback); the retries are
        debug lines."""
        if self._outage.begin():
            self._on_connected(False)
            if bug:
                log.exception("the watch on the addon CR failed; listing it again until it works")
            else:
                log.warning(
                    "lost the watch on the addon CR %s; retrying until the API server answers",
                    self._store.ref,
                    extra={"error": error},
                )
        else:
            log.debug("the addon CR still cannot be read", extra={"error": error})

    def _restored(self) -> None:
        """A list succeeded: the loop reads the CR again (told once if it had lost it). The line
        is logged before `on_connected` says so, so whoever sees the gauge also finds the line."""
        ended = self._outage.end()
        if ended is not None:
            seconds, tries = ended
            log.info(
                "the watch on the addon CR %s is restored",
                self._store.ref,
                extra={"lostSeconds": round(seconds, 3), "failedAttempts": tries},
            )
        self._on_connected(True)

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


class _Outage:
    """When the loop lost the CR and how many tries failed since; only the loop's thread uses it."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._tries = 0

    def begin(self) -> bool:
        """Count a failure; True for the first one of an outage."""
        self._tries += 1
        if self._since is not None:
            return False
        self._since = time.monotonic()
        return True

    def end(self) -> tuple[float, int] | None:
        """(seconds lost, failed tries) if an outage just ended; None if there was none."""
        if self._since is None:
            return None
        ended = (time.monotonic() - self._since, self._tries)
        self._since, self._tries = None, 0
        return ended
