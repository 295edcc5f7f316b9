"""A list answer decoded an item at a time: its envelope first (each item left as its raw
bytes), then each item decoded and handed to the reader's `keep`, which keeps its projection and
drops the rest before the next item is decoded. A page of 500 hub copies is 4 MiB on the wire;
decoded whole, it would be 15 MiB of Python objects, and the hub side keeps half a kilobyte of
each (docs/performance.md has the measurements that chose msgspec over `json`, ijson and the
standard library's `raw_decode`)."""

from __future__ import annotations

import json
from typing import TypeVar

import msgspec

from controller.kube.api import Keep, KubeError, Page

__all__ = ["decode_page"]

T = TypeVar("T")


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""  # noqa: N815 - the API's names
    continue_: str = msgspec.field(default="", name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)
    items: list[msgspec.Raw] | None = None


_ENVELOPE = msgspec.json.Decoder(_List)
_ITEM = msgspec.json.Decoder()


def decode_page(answer: bytes, keep: Keep[T], what: str) -> Page[T]:
    """The page `answer` holds, with what `keep` kept of each item that is an object."""
    try:
        envelope = _ENVELOPE.decode(answer)
    except msgspec.DecodeError:
        return _decoded_whole(answer, keep, what)
    except msgspec.ValidationError as error:
        raise KubeError(f"{what}: the API server answered something not a list ({error})") from None
    if envelope.items is None:
        raise KubeError(f"{what}: the API server's list has no items")
    kept: list[T] = []
    for raw in envelope.items:
        item = _ITEM.decode(raw)
        if isinstance(item, dict) and (value := keep(item)) is not None:
            kept.append(value)
    meta = envelope.metadata
    return Page(kept, meta.resourceVersion, meta.continue_, len(answer))


def _decoded_whole(answer: bytes, keep: Keep[T], what: str) -> Page[T]:
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
    kept = [v for i in items if isinstance(i, dict) and (v := keep(i)) is not None]
    version, token = meta.get("resourceVersion"), meta.get("continue")
    return Page(kept, str(version or ""), str(token or ""), len(answer))
