"""The one status-update loop (library-go's `v1helpers.UpdateStatus`): read, apply a pure
mutator, skip the write when nothing changes, write with the read resourceVersion, and on 409
Conflict start over from a fresh read, a bounded number of times.

Used for the spoke's addon CR (`controller.spoke.status_writer`) and its hub copy
(`controller.spoke.replication`); anything else whose status this controller owns a part of uses
it too. The caller's `first` is an object it believes current (a watch event just delivered
it, or its own last write): the first attempt starts from it and saves a read; a 409 says it was
not current, and every retry reads afresh.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from controller.kube.api import ConflictError, json_copy

__all__ = ["Updated", "update_status"]

Status = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Updated:
    """`obj` is the object as stored after the call; `written` says whether a PUT changed it."""

    obj: dict[str, Any]
    written: bool


def update_status(
    read: Callable[[], dict[str, Any]],
    mutate: Callable[[Mapping[str, Any]], Status | None],
    write: Callable[[dict[str, Any]], dict[str, Any]],
    *,
    what: str,
    attempts: int = 5,
    first: Mapping[str, Any] | None = None,
    on_conflict: Callable[[int, ConflictError], None] = lambda attempt, error: None,
) -> Updated:
    """Make the object's status `mutate(status)`; `mutate` returns None (or the same status)
    when the status is already right. `write` gets the whole object with the new status and
    the read `metadata.resourceVersion` as its precondition.

    `on_conflict(attempt, error)` runs before each retry. Raises ConflictError naming `what`
    when every attempt met a newer object; any other error of `read` or `write` at once.
    """
    if attempts < 1:
        raise ValueError("attempts must be at least 1")
    last: ConflictError | None = None
    for attempt in range(1, attempts + 1):
        obj = json_copy(dict(first)) if first is not None and attempt == 1 else read()
        current = obj.get("status") or {}
        status = mutate(current)
        if status is None or status == current:
            return Updated(obj, written=False)
        try:
            return Updated(write({**obj, "status": status}), written=True)
        except ConflictError as error:
            last = error
            if attempt < attempts:
                on_conflict(attempt, error)
    raise ConflictError(
        f"{what}: still conflicting after {attempts} attempts", status=409
    ) from last
