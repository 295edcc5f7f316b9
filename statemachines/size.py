"""Size (docs/spec.md §6): every status fits what the API server stores, by construction.

Texts have limits — a report's message 1,024 characters wherever it is written, the addon's message
4,096, a history entry's 256, a resource's 1,024 — and a longer one is cut to exactly the limit,
ending in `…`. The whole status, encoded as JSON with non-ASCII as `\\uXXXX` (up to 12 bytes a
character; the seam sends it so, without the spaces counted here), stays within `BUDGET`. Only
texts are elastic: `fitted` cuts every text of a status further by one factor, halving until it
fits; the rest of a status (its lists, names, times and versions) is what the configuration allows,
and `shape_problem` refuses at load a configuration whose status could not fit even with every text
at its shortest. Pure: no I/O; `json` only measures.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any, Final

__all__ = [
    "ADDON_MESSAGE",
    "BUDGET",
    "ELLIPSIS",
    "HISTORY_MESSAGE",
    "REPORT_MESSAGE",
    "RESOURCE_MESSAGE",
    "Measure",
    "cut",
    "encoded_size",
    "fitted",
    "texts_at_shortest",
]

REPORT_MESSAGE: Final = 1024
ADDON_MESSAGE: Final = 4096
HISTORY_MESSAGE: Final = 256
RESOURCE_MESSAGE: Final = 1024
BUDGET: Final = 256 * 1024  # bytes of the whole status as the client sends it
ELLIPSIS: Final = "…"

Status = dict[str, Any]
Measure = Callable[[Any], int]


def cut(text: str, limit: int) -> str:
    """`text` itself if it has at most `limit` characters (code points, as the API server
    counts), else its first `limit - 1` and `…`: exactly `limit` long."""
    if len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def encoded_size(value: Any) -> int:
    """Bytes of `value` as `json.dumps` encodes it by default (ASCII only, a character beyond
    the BMP as two `\\uXXXX` escapes): an upper bound of the compact JSON the seam sends."""
    return len(json.dumps(value))


def _texts(status: MutableMapping[str, Any]) -> Iterator[tuple[MutableMapping[str, Any], str, int]]:
    """Every elastic text of a status: (the mapping holding it, its key, its limit)."""
    for condition in status.get("conditions") or []:
        if isinstance(condition, dict) and isinstance(condition.get("message"), str):
            yield condition, "message", ADDON_MESSAGE
    for collector in status.get("collectors") or []:
        for key in ("message", "pendingMessage"):
            if isinstance(collector, dict) and isinstance(collector.get(key), str):
                yield collector, key, REPORT_MESSAGE
    for entry in status.get("history") or []:
        if isinstance(entry, dict) and isinstance(entry.get("message"), str):
            yield entry, "message", HISTORY_MESSAGE
    for resource in status.get("resources") or []:
        if not isinstance(resource, dict):
            continue
        for condition in resource.get("conditions") or []:
            if isinstance(condition, dict) and isinstance(condition.get("message"), str):
                yield condition, "message", RESOURCE_MESSAGE
        pending = resource.get("pending")
        if isinstance(pending, dict) and isinstance(pending.get("message"), str):
            yield pending, "message", RESOURCE_MESSAGE


def _shortened(status: Status, divisor: int) -> Status:
    """A copy of `status` whose every text is cut to its limit divided by `divisor`."""
    short = copy.deepcopy(status)
    for holder, key, limit in _texts(short):
        holder[key] = cut(holder[key], max(limit // divisor, 1))
    return short


def fitted(status: Status, *, measure: Measure = encoded_size, budget: int = BUDGET) -> Status:
    """`status` when it fits `budget` as `measure` counts it; else the first of its copies with
    every text cut to half, a quarter, ... of its limit that fits. The configuration's check
    (`shape_problem`) makes sure the last, every text one character long, fits."""
    if measure(status) <= budget:
        return status
    divisor = 2
    while True:
        short = _shortened(status, divisor)
        if measure(short) <= budget or divisor > max(ADDON_MESSAGE, REPORT_MESSAGE):
            return short
        divisor *= 2


def texts_at_shortest(status: Status) -> Status:
    """`status` with every text one character long: its shape, as the budget sees it."""
    return _shortened(status, max(ADDON_MESSAGE, REPORT_MESSAGE) * 2)
