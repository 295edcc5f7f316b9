"""Conditions as the hub side's caches keep them, 10,000 clusters of each kind: a condition's
six fields in slots, each equal string one object (`sys.intern`), read as a read-only mapping.
A dict of the same fields costs about 360 bytes, this 80; at 10,000 clusters, with a hub copy's
five and a ManagedClusterAddOn's eight, that is some 30 MB (tests/bench/hub_side.py).
What leaves the caches for a sync is `thawed` back into dicts."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

__all__ = ["KeptCondition", "kept", "shared", "thawed"]

FIELDS: Final = ("type", "status", "observedGeneration", "lastTransitionTime", "reason", "message")
_FIELDS: Final = frozenset(FIELDS)


def shared(value: Any) -> Any:
    """One object for every equal string kept (the caches hold 10,000 of each status, type and
    reason): `sys.intern`, whose strings die with their last reference."""
    return sys.intern(value) if type(value) is str else value


class KeptCondition(Mapping[str, Any]):
    """A condition's fields (those of metav1.Condition, which a structural schema keeps alone),
    read only."""

    __slots__ = FIELDS

    def __init__(self, condition: Mapping[str, Any]) -> None:
        for key, value in condition.items():
            object.__setattr__(self, key, shared(value))

    def __setattr__(self, key: str, value: object) -> None:
        raise AttributeError("a kept condition is read only")

    def __getitem__(self, key: str) -> Any:
        if key not in _FIELDS:
            raise KeyError(key)
        try:
            return getattr(self, key)
        except AttributeError:
            raise KeyError(key) from None

    def __iter__(self) -> Iterator[str]:
        return (key for key in FIELDS if hasattr(self, key))

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def __repr__(self) -> str:
        return f"KeptCondition({dict(self)!r})"


def kept(condition: Any) -> Any:
    """`condition` as the caches keep it: a `KeptCondition` when it is an object of those fields
    alone (the string keys of what a schema keeps), anything else as it is (left for the reader
    to refuse)."""
    if isinstance(condition, dict) and condition.keys() <= _FIELDS:
        return KeptCondition(condition)
    return condition


def thawed(conditions: Sequence[Any]) -> list[Any]:
    """Kept conditions as dicts again, for a sync that builds a write from them."""
    return [dict(c) if isinstance(c, KeptCondition) else c for c in conditions]
