"""A list answer decoded an item at a time: its envelope first (each item left as its raw
bytes), then each item decoded and handed to the reader's `keep`, which keeps its projection and
drops the rest before the next item is decoded. A page of 500 hub copies is 4 MiB on the wire;
decoded whole, it would be 15 MiB of Python objects, and the hub side keeps half a kilobyte of
each (docs/performance.md has the measurements that chose msgspec over `json`, ijson and the
standard library's `raw_decode`). A `conditions` reader's objects are decoded a field at a time,
as far as `conditions_only` keeps: the rest is skipped by the parser, never built; a watch line is
decoded the same way (`decode_event`)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from controller.kube.api import Keep, KubeError, Page
from controller.kube.reads import Reads, conditions_only, writers_only

__all__ = ["decode_event", "decode_object", "decode_page"]

T = TypeVar("T")


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""  # noqa: N815 - the API's names
    continue_: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


_ENVELOPE = msgspec.json.Decoder(_List)
_ITEM = msgspec.json.Decoder()
_FIELDS = msgspec.json.Decoder(dict[str, msgspec.Raw])  # an object, each value left unread


def decode_object(raw: bytes | msgspec.Raw, reads: Reads) -> Any:
    """One object as `reads` says: whole, or as `conditions_only` keeps it without decoding the
    rest. Raises msgspec.DecodeError on what is not JSON."""
    if reads == "object":
        return _ITEM.decode(raw)
    try:
        fields = _FIELDS.decode(raw)
    except msgspec.ValidationError:  # JSON, not an object
        return _ITEM.decode(raw)
    kept: dict[str, Any] = {}
    for key in ("apiVersion", "kind"):
        if key in fields:
            kept[key] = _ITEM.decode(fields[key])
    if "metadata" in fields:
        meta = _part(fields["metadata"], lambda key: True)
        if isinstance(meta, dict) and "managedFields" in meta:  # who wrote: a few entries
            meta["managedFields"] = writers_only(meta["managedFields"])
        kept["metadata"] = meta
    if "status" in fields:
        kept["status"] = _part(fields["status"], lambda key: key == "conditions")
    return kept


def _part(raw: msgspec.Raw, wanted: Callable[[str], bool]) -> Any:
    """The fields of the object `raw` that are `wanted`, decoded; what is no object, whole."""
    try:
        fields = _FIELDS.decode(raw)
    except msgspec.ValidationError:
        return _ITEM.decode(raw)
    return {key: _ITEM.decode(value) for key, value in fields.items() if wanted(key)}


def decode_event(line: bytes, reads: Reads) -> tuple[Any, Any]:
    """A watch line's type and object (None for what it lacks; an ERROR's object whole). Raises
    ValueError on what is not JSON."""
    try:
        fields = _FIELDS.decode(line)
        kind = _ITEM.decode(fields["type"]) if "type" in fields else None
        raw = fields.get("object")
        obj = None if raw is None else decode_object(raw, "object" if kind == "ERROR" else reads)
    except msgspec.ValidationError:  # JSON, not an object
        return None, None
    except msgspec.DecodeError:  # see _decoded_whole
        event = json.loads(line)
        if not isinstance(event, dict):
            return None, None
        kind, obj = event.get("type"), event.get("object")
        if reads == "conditions" and kind != "ERROR" and isinstance(obj, dict):
            obj = conditions_only(obj)
    return kind, obj


def decode_page(answer: bytes, keep: Keep[T], what: str, reads: Reads = "object") -> Page[T]:
    """The page `answer` holds, with what `keep` kept of each item that is an object (decoded
    as much as `reads` says)."""
    try:
        envelope = _ENVELOPE.decode(answer)
    except msgspec.DecodeError:  # ValidationError too: told as the standard library finds it
        return _decoded_whole(answer, keep, what, reads)
    if envelope.items is None:
        raise KubeError(f"{what}: the API server's list has no items")
    kept: list[T] = []
    for raw in envelope.items:
        item = decode_object(raw, reads)
        if isinstance(item, dict) and (value := keep(item)) is not None:
            kept.append(value)
    meta = envelope.metadata
    return Page(kept, meta.resourceVersion, meta.continue_, len(answer))


def _decoded_whole(answer: bytes, keep: Keep[T], what: str, reads: Reads) -> Page[T]:
    """What msgspec refuses but JSON allows (a lone UTF-16 surrogate escape, which Go's decoder
    takes as U+FFFD; kube-apiserver never sends one), decoded whole as the standard library
    decodes it."""
    try:
        data = json.loads(answer)
    except ValueError:
        raise KubeError(f"{what}: the API server answered something not JSON") from None
    meta = data.get("metadata") if isinstance(data, dict) else None
    items = data.get("items") if isinstance(data, dict) else None
    if not isinstance(items, list) or not isinstance(meta, dict | None):
        raise KubeError(f"{what}: the API server answered something not a list")
    meta = meta or {}
    if reads == "conditions":
        items = [conditions_only(i) if isinstance(i, dict) else i for i in items]
    kept = [v for i in items if isinstance(i, dict) and (v := keep(i)) is not None]
    version, token = meta.get("resourceVersion"), meta.get("continue")
    return Page(kept, str(version or ""), str(token or ""), len(answer))
