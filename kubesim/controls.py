"""What a test does to storage behind the API's back, as another writer of etcd would: read
an object, write or delete one without validation, audit or faults (server-owned metadata is
kept or filled, watches see the change)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kubesim.codec import Clock, clone, format_time
from kubesim.registry import Registry
from kubesim.store import Store

__all__ = ["StorageControls"]


class StorageControls:
    """The APIServer's controls over its storage (a mixin: the server sets these)."""

    _registry: Registry
    _store: Store
    _clock: Clock

    def get_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> dict[str, Any] | None:
        rt = self._registry.served(group, version, plural)
        obj = self._store.get(rt.id, (namespace if rt.namespaced else "", name))
        return None if obj is None else clone(self._registry.out(rt, version, obj))

    def put_object(
        self, group: str, version: str, plural: str, obj: Mapping[str, Any]
    ) -> dict[str, Any]:
        """Write straight to storage; a new resourceVersion is assigned."""
        rt = self._registry.served(group, version, plural)
        new = clone(dict(obj))
        meta = new.setdefault("metadata", {})
        key = (meta.get("namespace", "") if rt.namespaced else "", meta["name"])
        with self._store.lock:
            old_meta = (self._store.get(rt.id, key) or {}).get("metadata", {})
            meta.setdefault("uid", old_meta.get("uid", str(uuid.uuid4())))
            meta.setdefault(
                "creationTimestamp", old_meta.get("creationTimestamp", format_time(self._clock()))
            )
            if rt.strategy.sets_generation:
                meta.setdefault("generation", old_meta.get("generation", 1))
            meta.pop("resourceVersion", None)
            new["apiVersion"] = rt.api_version(rt.storage_version)
            new.setdefault("kind", rt.kind)
            stored = self._store.commit(rt.id, key, new)
        return clone(self._registry.out(rt, version, stored))

    def delete_object(
        self, group: str, version: str, plural: str, namespace: str, name: str
    ) -> bool:
        rt = self._registry.served(group, version, plural)
        key = (namespace if rt.namespaced else "", name)
        with self._store.lock:
            if self._store.get(rt.id, key) is None:
                return False
            self._store.commit(rt.id, key, None)
            return True
