"""Kubernetes' protobuf encoding, read where a client sends it: kubectl sends the access review
of `kubectl auth can-i` as protobuf, as client-go does for built-in kinds. The body is the
`k8s\\0` envelope around a `runtime.Unknown` (its `typeMeta`, then the object's bytes); the
messages known here are the access reviews' (k8s.io/api/authorization/v1 generated.proto) and
the object metadata's names. Any other kind is refused as a server that cannot decode it
refuses it (415); the answer goes back in JSON, which every client reads."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

__all__ = ["PROTOBUF", "decode_protobuf", "wire_fields"]

PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
_MAGIC: Final = b"k8s\x00"
# message -> field number -> (JSON name, "s" a string, "s*" repeated strings, or a message)
_MESSAGES: Final[dict[str, dict[int, tuple[str, str]]]] = {
    "Unknown": {1: ("typeMeta", "TypeMeta"), 2: ("raw", "bytes")},
    "TypeMeta": {1: ("apiVersion", "s"), 2: ("kind", "s")},
    "ObjectMeta": {1: ("name", "s"), 2: ("generateName", "s"), 3: ("namespace", "s")},
    "ResourceAttributes": {
        1: ("namespace", "s"), 2: ("verb", "s"), 3: ("group", "s"), 4: ("version", "s"),
        5: ("resource", "s"), 6: ("subresource", "s"), 7: ("name", "s"),
    },
    "NonResourceAttributes": {1: ("path", "s"), 2: ("verb", "s")},
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
    },
    "SubjectAccessReviewSpec": {
        1: ("resourceAttributes", "ResourceAttributes"),
        2: ("nonResourceAttributes", "NonResourceAttributes"),
        3: ("user", "s"), 4: ("groups", "s*"), 6: ("uid", "s"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "ObjectMeta"), 2: ("spec", "SelfSubjectAccessReviewSpec"),
    },
    "SubjectAccessReview": {1: ("metadata", "ObjectMeta"), 2: ("spec", "SubjectAccessReviewSpec")},
}  # fmt: skip
_KINDS: Final = {
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SubjectAccessReview"),
}


def decode_protobuf(body: bytes) -> dict[str, Any] | None:
    """The object as JSON would carry it; None for a kind not known here. Raises ValueError
    for a body that is not the envelope or not well-formed."""
    if not body.startswith(_MAGIC):
        raise ValueError("not the k8s protobuf envelope")
    unknown = _message(body[len(_MAGIC) :], "Unknown")
    meta = unknown.get("typeMeta") or {}
    api_version, kind = meta.get("apiVersion", ""), meta.get("kind", "")
    if (api_version, kind) not in _KINDS:
        return None
    return {"apiVersion": api_version, "kind": kind, **_message(unknown.get("raw", b""), kind)}


def _message(data: bytes, name: str) -> dict[str, Any]:
    fields = _MESSAGES[name]
    out: dict[str, Any] = {}
    for number, value in wire_fields(data):
        if number not in fields or not isinstance(value, bytes):
            continue  # a field not read here (fieldSelector, extra, a varint...)
        key, kind = fields[number]
        if kind == "bytes":
            out[key] = value
        elif kind == "s":
            out[key] = value.decode("utf-8")
        elif kind == "s*":
            out.setdefault(key, []).append(value.decode("utf-8"))
        else:
            out[key] = _message(value, kind)
    return out


def wire_fields(data: bytes) -> Iterator[tuple[int, bytes | int]]:
    """(field number, value) of each field on the wire: an int for a varint, bytes for the
    others (a fixed64 or fixed32 as its 8 or 4 bytes)."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire in (1, 2, 5):
            length = 8 if wire == 1 else 4
            if wire == 2:
                length, at = _varint(data, at)
            if at + length > len(data):
                raise ValueError("a field runs past the end of the message")
            yield number, data[at : at + length]
            at += length
        else:
            raise ValueError(f"wire type {wire} is not one protobuf writes")


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a varint runs past the end of the message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at
