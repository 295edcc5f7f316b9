"""The `Kube` seam in memory (`MemoryKube`): what `controller.kube.fake.FakeKube` serves.

It keeps the rules the controller relies on, as kube-apiserver has them: one resourceVersion
counter for all objects, moved by every write; a write carrying `metadata.resourceVersion`
must carry the stored one (409 Conflict otherwise); a create of an existing name is a 409; a
PUT on `status` touches only the status and a PUT of the object keeps the status; the
generation moves with the spec; a watch replays the history after its version and answers
410 Gone once that history was compacted.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from controller.kube.api import (
    ADDON,
    CONFIG_MAP,
    EVENT,
    LEASE,
    NAMESPACE,
    ApiResource,
    ConflictError,
    GoneError,
    Keep,
    KindNotServedError,
    NotFoundError,
    Page,
    UnavailableError,
    WatchEvent,
    json_copy,
)
from controller.kube.reads import Reads, conditions_only

T = TypeVar("T")

__all__ = ["Call", "MemoryKube", "merge_patched"]

Key = tuple[ApiResource, str, str]
Op = Literal[
    "discover",
    "get",
    "list",
    "watch",
    "create",
    "replace",
    "replace_status",
    "patch",
    "patch_status",
    "review_token",
]
# What a fresh fake serves (`serve` adds more): the kinds the controller itself touches, and
# two that health rules commonly watch.
_SERVED = (
    ADDON,
    LEASE,
    EVENT,
    CONFIG_MAP,
    NAMESPACE,
    ApiResource("apps", "v1", "deployments", "Deployment"),
    ApiResource("", "v1", "secrets", "Secret"),
)


@dataclass(frozen=True, slots=True)
class Call:
    op: Op
    resource: ApiResource | None
    name: str
    at: float


@dataclass
class _Stream:
    kube: MemoryKube
    resource: ApiResource
    namespace: str
    name: str
    after: int
    deadline: float
    label_selector: str = ""
    reads: Reads = "object"
    closed: bool = False

    def __iter__(self) -> Iterator[WatchEvent]:
        return self.kube._events_after(self)

    def close(self) -> None:
        with self.kube._changed:
            self.closed = True
            self.kube._changed.notify_all()


@dataclass
class MemoryKube:
    """`controller.kube.api.Kube` in memory; thread-safe. `prune` names status fields the
    server drops (a schema that does not know them); `tokens` maps a bearer token to the
    TokenReview user it proves (username, groups). `controller.kube.fake.FakeKube` adds what a
    test does to it."""

    prune: frozenset[str] = frozenset()
    tokens: dict[str, dict[str, Any]] = field(default_factory=dict)
    delay: float = 0.0
    gate: threading.Event = field(default_factory=threading.Event)
    before: dict[str, Callable[[], object]] = field(default_factory=dict)
    calls: builtins.list[Call] = field(default_factory=list)
    written: builtins.list[dict[str, Any]] = field(default_factory=list)  # statuses stored by PUTs
    conflicts: int = 0
    faults: dict[str, builtins.list[Exception]] = field(default_factory=dict)  # per operation

    def __post_init__(self) -> None:
        self.gate.set()
        self._changed = threading.Condition()
        self._objects: dict[Key, dict[str, Any]] = {}
        self._version = 0
        self._history: builtins.list[tuple[int, Key, WatchEvent]] = []
        self._horizon = 0  # versions at or below this one are compacted away
        self._streams: builtins.list[_Stream] = []
        self._served = {(r.api_version, r.kind): r for r in _SERVED}
        self._resource_faults: dict[tuple[str, ApiResource | None], builtins.list[Exception]] = {}

    # ---- Kube --------------------------------------------------------------------------------

    def discover(self, api_version: str, kind: str) -> ApiResource:
        self._enter("discover", None, kind)
        with self._changed:
            served = self._served.get((api_version, kind))
        if served is None:
            raise KindNotServedError(f"{api_version} {kind} is not served", status=404)
        return served

    def get(self, resource: ApiResource, namespace: str, name: str) -> dict[str, Any]:
        self._enter("get", resource, name)
        with self._changed:
            return json_copy(self._stored((resource, namespace, name)))

    def list(
        self,
        resource: ApiResource,
        namespace: str,
        *,
        keep: Keep[T],
        field_selector: str = "",
        label_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
        reads: Reads = "object",
    ) -> Page[T]:
        """A label selector of `key=value` and `key` (exists) terms only; a page continues
        after the item (by namespace and name) its token names."""
        self._enter("list", resource, "")
        wanted = field_selector.removeprefix("metadata.name=") if field_selector else None
        with self._changed:
            chosen = sorted(
                ((ns, name), obj)
                for (kind, ns, name), obj in self._objects.items()
                if kind == resource
                and namespace in (ns, "")
                and wanted in (None, name)
                and _labelled(obj, label_selector)
                and (not continue_token or (ns, name) > tuple(continue_token.split("/", 1)))
            )
            page = chosen[:limit] if limit else chosen
            items = [json_copy(obj) for _, obj in page]
            version = str(self._version)
        token = "/".join(page[-1][0]) if limit and len(chosen) > limit else ""
        kept = [value for item in items if (value := keep(_read(item, reads))) is not None]
        return Page(kept, version, token)

    def watch(
        self,
        resource: ApiResource,
        namespace: str,
        *,
        resource_version: str,
        timeout_seconds: int,
        field_selector: str = "",
        label_selector: str = "",
        reads: Reads = "object",
    ) -> _Stream:
        self._enter("watch", resource, "")
        name = field_selector.removeprefix("metadata.name=")
        deadline = time.monotonic() + timeout_seconds
        stream = _Stream(
            self,
            resource,
            namespace,
            name,
            int(resource_version or 0),
            deadline,
            label_selector,
            reads,
        )
        with self._changed:
            self._streams.append(stream)
        return stream

    def create(
        self, resource: ApiResource, namespace: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        name = str(body["metadata"]["name"])
        self._enter("create", resource, name)
        with self._changed:
            key = (resource, namespace, name)
            if key in self._objects:
                raise ConflictError(f"{resource.plural} {name!r} already exists", status=409)
            obj = json_copy(dict(body))
            obj["metadata"] = {
                **obj["metadata"],
                "namespace": namespace,
                "uid": f"uid-{self._version + 1}",
                "generation": 1,
            }
            obj["metadata"].pop("resourceVersion", None)
            self._objects[key] = obj
            return self._bump(key, "ADDED")

    def replace(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        self._enter("replace", resource, name)
        with self._changed:
            key = (resource, namespace, name)
            stored = self._precondition(key, body)
            obj = json_copy(dict(body))
            # What an update may change in metadata, as kube-apiserver allows it.
            mutable = ("labels", "annotations", "ownerReferences", "finalizers")
            meta = {
                **stored["metadata"],
                **{k: v for k, v in obj["metadata"].items() if k in mutable},
            }
            if obj.get("spec") != stored.get("spec"):
                meta["generation"] = int(meta.get("generation") or 1) + 1
            obj["metadata"] = meta
            if "status" in stored:
                obj["status"] = stored["status"]
            self._objects[key] = obj
            return self._bump(key, "MODIFIED")

    def replace_status(
        self, resource: ApiResource, namespace: str, name: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        self._enter("replace_status", resource, name)
        with self._changed:
            key = (resource, namespace, name)
            stored = self._precondition(key, body)
            status = {k: v for k, v in (body.get("status") or {}).items() if k not in self.prune}
            stored["status"] = json_copy(status)
            self.written.append(json_copy(status))
            return self._bump(key, "MODIFIED")

    def patch(
        self,
        resource: ApiResource,
        namespace: str,
        name: str,
        patch: Mapping[str, Any],
        *,
        merge: bool = False,
    ) -> dict[str, Any]:
        """A merge of `patch`'s top-level fields (all a strategic merge patch of scalars does);
        with `merge`, RFC 7386 under the resourceVersion precondition."""
        self._enter("patch", resource, name)
        with self._changed:
            key = (resource, namespace, name)
            if merge:
                stored = self._precondition(key, patch)
                status = stored.get("status")
                patched = merge_patched(stored, {k: v for k, v in patch.items() if k != "status"})
                self._objects[key] = {**patched, "status": status} if status else patched
            else:
                self._stored(key).update(json_copy(dict(patch)))
            return self._bump(key, "MODIFIED")

    def patch_status(
        self, resource: ApiResource, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> dict[str, Any]:
        self._enter("patch_status", resource, name)
        with self._changed:
            key = (resource, namespace, name)
            stored = self._precondition(key, patch)
            status = merge_patched(stored.get("status") or {}, patch.get("status") or {})
            stored["status"] = {k: v for k, v in status.items() if k not in self.prune}
            self.written.append(json_copy(stored["status"]))
            return self._bump(key, "MODIFIED")

    def review_token(self, token: str, audiences: builtins.list[str]) -> dict[str, Any]:
        self._enter("review_token", None, "")
        user = self.tokens.get(token)
        if user is None:
            return {"authenticated": False}
        return {"authenticated": True, "user": json_copy(user), "audiences": list(audiences)}

    # ---- what tests and other actors do ------------------------------------------------------

    def _enter(self, op: Op, resource: ApiResource | None, name: str) -> None:
        with self._changed:
            self.calls.append(Call(op, resource, name, time.monotonic()))
        if not self.gate.wait(10):
            raise UnavailableError("the test's gate never opened")
        if self.delay:
            time.sleep(self.delay)
        with self._changed:
            pending = self._resource_faults.get((op, resource)) or self.faults.get(op)
            error = pending.pop(0) if pending else None
        if error is not None:
            raise error
        hook = self.before.get(op)
        if hook is not None:
            hook()

    def _stored(self, key: Key) -> dict[str, Any]:
        obj = self._objects.get(key)
        if obj is None:
            resource, _, name = key
            raise NotFoundError(f"{resource.plural} {name!r} not found", status=404)
        return obj

    def _precondition(self, key: Key, body: Mapping[str, Any]) -> dict[str, Any]:
        stored = self._stored(key)
        wanted = (body.get("metadata") or {}).get("resourceVersion")
        if wanted and wanted != stored["metadata"]["resourceVersion"]:
            self.conflicts += 1
            raise ConflictError("the object has been modified", status=409)
        return stored

    def _bump(self, key: Key, kind: Literal["ADDED", "MODIFIED"]) -> dict[str, Any]:
        obj = self._objects[key]
        self._version += 1
        obj["metadata"]["resourceVersion"] = str(self._version)
        snapshot = json_copy(obj)
        self._history.append((self._version, key, WatchEvent(kind, snapshot)))
        self._changed.notify_all()
        return json_copy(snapshot)

    def _matches(self, stream: _Stream, key: Key) -> bool:
        resource, namespace, name = key
        return (
            resource == stream.resource
            and stream.namespace in (namespace, "")
            and (not stream.name or name == stream.name)
        )

    def _events_after(self, stream: _Stream) -> Iterator[WatchEvent]:
        if stream.after < self._horizon:
            raise GoneError("too old resource version", status=410)
        seen = stream.after
        while True:
            with self._changed:
                while not stream.closed and not self._newer(stream, seen):
                    left = stream.deadline - time.monotonic()
                    if left <= 0:
                        stream.closed = True
                        break
                    self._changed.wait(min(left, 0.5))
                if stream.closed:
                    return
                version, event = next(
                    (v, e) for v, k, e in self._history if v > seen and self._matches(stream, k)
                )
            if not _labelled(event.object, stream.label_selector):
                seen = version
                continue
            seen = version
            yield WatchEvent(event.type, _read(json_copy(event.object), stream.reads))

    def _newer(self, stream: _Stream, seen: int) -> bool:
        return any(v > seen and self._matches(stream, k) for v, k, _ in self._history)


def _read(obj: dict[str, Any], reads: Reads) -> dict[str, Any]:
    """What a reader gets of `obj`, as the REST client decodes it."""
    return conditions_only(obj) if reads == "conditions" else obj


def _labelled(obj: Mapping[str, Any], selector: str) -> bool:
    """`obj` has the labels of `selector` (`key=value` and `key` terms; the fake's subset)."""
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for term in filter(None, selector.split(",")):
        key, equals, value = term.partition("=")
        if key not in labels or (equals and labels[key] != value):
            return False
    return True


def merge_patched(target: Any, patch: Any) -> Any:
    """RFC 7386: an object merges key by key (null removes), anything else replaces."""
    if not isinstance(patch, Mapping):
        return json_copy(patch)
    merged = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patched(merged.get(key), value)
    return merged
