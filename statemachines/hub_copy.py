"""What the hub's copy of the addon CR gets of the spoke's status (sections 7, 9 and 10).

`conditions`: the conditions only (the standard types, `Ready`, the collectors', and whatever
else the spoke writes there, e.g. `ResourcesHealthy`). `status`: the status a reader on the hub
wants (conditions, history, versions, related objects, the last known good generation), never
the controller's own bookkeeping (`collectors`: machines, open dampening windows, generations;
each resource's `pending`: the open `for` window). A window that opens or closes changes only
the bookkeeping, so dampening and `for` save hub writes in both modes. Plain dicts in, plain
dicts out.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Literal

__all__ = ["BOOKKEEPING", "RESOURCE_BOOKKEEPING", "CopyMode", "for_hub"]

CopyMode = Literal["conditions", "status"]

# Status fields only the controller reads back: never copied to the hub.
BOOKKEEPING = frozenset({"collectors"})
RESOURCE_BOOKKEEPING = frozenset({"pending"})


def for_hub(status: Mapping[str, Any], mode: CopyMode) -> dict[str, Any]:
    """The part of `status` the hub copy gets in `mode` (a deep copy)."""
    if mode == "conditions":
        return {"conditions": copy.deepcopy(list(status.get("conditions") or []))}
    copied = {k: copy.deepcopy(v) for k, v in status.items() if k not in BOOKKEEPING}
    if isinstance(copied.get("resources"), list):
        copied["resources"] = [_without_window(entry) for entry in copied["resources"]]
    return copied


def _without_window(entry: object) -> object:
    if not isinstance(entry, dict):
        return entry
    return {k: v for k, v in entry.items() if k not in RESOURCE_BOOKKEEPING}
