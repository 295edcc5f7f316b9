"""A built-in type's strategy: its Go struct decoded from JSON (400 on a type error), no
generation; what every kind of `kubesim.builtins` and `kubesim.events` shares."""

from __future__ import annotations

from typing import Any

from kubesim.meta import coerce_metadata
from kubesim.resources import Strategy
from kubesim.typed import Struct, decode

__all__ = ["TypedStrategy"]

Obj = dict[str, Any]


class TypedStrategy(Strategy):
    """A built-in type: decoded into its Go struct (400 on a type error), no generation."""

    def __init__(self, struct: Struct) -> None:
        self.struct = struct

    def decode(self, body: Obj, version: str) -> tuple[Obj, list[str]]:
        metadata, dropped = coerce_metadata(body.get("metadata"))
        rest = {k: v for k, v in body.items() if k not in ("apiVersion", "kind", "metadata")}
        fields = decode(rest, self.struct, "", dropped)
        return {
            "kind": body.get("kind"),
            "apiVersion": body.get("apiVersion"),
            "metadata": metadata,
            **fields,
        }, dropped

    def bookmark(self, api_version: str, kind: str, rv: int) -> Obj:
        empty = decode({}, self.struct, "", [])
        return {**super().bookmark(api_version, kind, rv), **empty}
