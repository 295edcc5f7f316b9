"""The one informer, as client-go's: a reflector (`controller.kube.reflector`: paged lists, then a
watch), a store of what the reader keeps of each object (`keep`: its projection, never more),
keyed by `namespace/name` (or `name` for a cluster-scoped kind), and handlers told of each change
in order, on the reflector's thread.

- A list replaces the store: an object new to it is added, one it held is updated, one the list
  no longer has is deleted (client-go's `Replace`).
- A watch event updates it; an object `keep` keeps nothing of is absent.
- A write's own answer may be put in the store before its watch event comes (`remember`,
  client-go's mutation cache): an entry is never replaced by an older resourceVersion, so a late
  event, or a list taken before that write, cannot take the store back; and an answer no newer
  than what the store has seen is dropped when the store no longer holds its object: it was
  deleted since (the write's answer came back after its deletion's event), and must not return.

Every process that watches does it through one of these: the spoke's addon CR and the objects
health rules name, the hub side's kinds, `fleet --watch` and the demo's simulated OCM.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

from controller.kube.api import Keep, Kube, KubeError, WatchEvent, resource_version, whole
from controller.kube.backoff import Backoff
from controller.kube.pager import PAGE
from controller.kube.reflector import Reflector, Selection, WatchMetrics

__all__ = ["Handlers", "Informer", "key_of"]

T = TypeVar("T")


def key_of(obj: Mapping[str, Any]) -> str:
    """client-go's `MetaNamespaceKeyFunc`: `namespace/name`, or `name` without a namespace."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    name, namespace = str(meta.get("name") or ""), str(meta.get("namespace") or "")
    return f"{namespace}/{name}" if namespace else name


class Handlers(Generic[T]):
    """What an informer tells (each optional): `added(key, new)`, `updated(key, old, new)` (a
    list's objects too, changed or not), `deleted(key, old)`, and `listed(resource_version)`
    after each list."""

    def __init__(
        self,
        *,
        added: Callable[[str, T], None] | None = None,
        updated: Callable[[str, T, T], None] | None = None,
        deleted: Callable[[str, T], None] | None = None,
        listed: Callable[[str], None] | None = None,
    ) -> None:
        self.added = added or (lambda key, new: None)
        self.updated = updated or (lambda key, old, new: None)
        self.deleted = deleted or (lambda key, old: None)
        self.listed = listed or (lambda version: None)


class Informer(Generic[T]):
    """The objects of `selection` through `kube`, each kept as `keep` keeps it; see the module
    docstring. `start()`, `stop()`, `alive` as any part."""

    def __init__(
        self,
        kube: Kube,
        selection: Selection,
        *,
        name: str,
        keep: Keep[T] = whole,  # type: ignore[assignment]  # T is dict then
        handlers: Handlers[T] | None = None,
        on_failed: Callable[[KubeError], None] | None = None,
        metrics: WatchMetrics | None = None,
        backoff: Backoff | None = None,
        watch_seconds: int = 300,
        page: int = PAGE,
    ) -> None:
        self.name = name
        self._keep = keep
        self._handlers: Handlers[T] = handlers or Handlers()
        self._lock = threading.Lock()
        self._store: dict[str, tuple[str, T]] = {}  # key -> (resourceVersion, kept)
        self._seen = ""  # the newest resourceVersion the store reflects (a list's, an event's)
        self._synced = False
        self.reflector = Reflector(
            kube, selection, name=name, on_listed=self._listed, on_event=self._event,
            on_failed=on_failed, metrics=metrics, backoff=backoff,
            watch_seconds=watch_seconds, keep=self._entry, page=page,
        )  # fmt: skip

    # --- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self.reflector.start()

    def stop(self, timeout: float = 5.0) -> None:
        self.reflector.stop(timeout)

    @property
    def alive(self) -> bool:
        return self.reflector.alive

    def problems(self, stuck_after: float) -> list[str]:
        """Its thread died (a watch may rightly wait on its server for minutes: never stuck)."""
        problem = self.reflector.problem()
        return [] if problem is None else [problem]

    # --- the store ---------------------------------------------------------------------------

    @property
    def synced(self) -> bool:
        """Listed at least once."""
        with self._lock:
            return self._synced

    def get(self, key: str) -> T | None:
        with self._lock:
            entry = self._store.get(key)
        return None if entry is None else entry[1]

    def items(self) -> dict[str, T]:
        """Every key and what is kept of it (a copy of the store's index, not of the values)."""
        with self._lock:
            return {key: entry[1] for key, entry in self._store.items()}

    def remember(self, obj: dict[str, Any]) -> None:
        """A write's answer: kept now, unless the store already holds something newer; the
        handlers hear of it when its watch event comes (which changes nothing then)."""
        entry = self._entry(obj)
        if entry is None:
            return
        key, version, kept = entry
        with self._lock:
            known = self._store.get(key)
            if known is None and _older(version, (self._seen, None), equal=True):
                return  # the store has seen past this answer, and the object is gone since
            if not _older(version, known):
                self._store[key] = (version, kept)

    # --- the reflector's hooks (its thread) -------------------------------------------------

    def _entry(self, obj: dict[str, Any]) -> tuple[str, str, T] | None:
        kept = self._keep(obj)
        return None if kept is None else (key_of(obj), resource_version(obj), kept)

    def _listed(self, entries: list[tuple[str, str, T]], version: str) -> None:
        changes: list[tuple[str, T | None, T | None]] = []
        with self._lock:
            before, store = self._store, {}
            for key, rv, kept in entries:
                known = before.get(key)
                store[key] = known if known is not None and _older(rv, known) else (rv, kept)
                changes.append((key, None if known is None else known[1], store[key][1]))
            changes += [(key, old, None) for key, (_, old) in before.items() if key not in store]
            self._store, self._synced, self._seen = store, True, version
        for key, old, new in changes:
            self._tell(key, old, new)
        self._handlers.listed(version)

    def _event(self, event: WatchEvent) -> None:
        entry = self._entry(event.object)
        key = key_of(event.object)
        gone = event.type == "DELETED" or entry is None
        with self._lock:
            self._seen = resource_version(event.object) or self._seen
            known = self._store.get(key)
            if gone:
                self._store.pop(key, None)
            elif entry is not None and _older(entry[1], known):
                return  # the store holds a newer answer of our own write
            elif entry is not None:
                self._store[key] = (entry[1], entry[2])
        if known is None:
            if not gone and entry is not None:
                self._handlers.added(key, entry[2])
        elif gone:  # as client-go, the object's last state: the deletion's own, when kept
            self._handlers.deleted(key, known[1] if entry is None else entry[2])
        elif entry is not None:
            self._handlers.updated(key, known[1], entry[2])

    def _tell(self, key: str, old: T | None, new: T | None) -> None:
        if new is None:
            if old is not None:
                self._handlers.deleted(key, old)
        elif old is None:
            self._handlers.added(key, new)
        else:
            self._handlers.updated(key, old, new)


def _older(version: str, known: tuple[str, Any] | None, *, equal: bool = False) -> bool:
    """`version` is older than the stored entry's (or as old, `equal`): resourceVersions compare
    as numbers on kube-apiserver's etcd storage; an unparsable one is never older."""
    if known is None:
        return False
    try:
        theirs, ours = int(version), int(known[0])
    except ValueError:
        return False
    return theirs <= ours if equal else theirs < ours
