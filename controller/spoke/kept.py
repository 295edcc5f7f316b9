"""The acm profile's two-object write (docs/spec.md §11): what its CRD prunes — windows,
versions, generations, history, `Ready` — is kept in the ConfigMap `<addon>-status` beside the
CR, written *before* the CR, so that a restart never resumes from bookkeeping older than the
CR; and rolled back with the CR when the API server rejects the CR's status.

`KeptStatus` is that transaction for the reconciler: `write` before the CR, `committed` once
the CR holds the status that goes with it, `restore` to put back what went with the CR's last
stored status (when the CR's write was rejected), and `stored` to read where to resume from.
In the seed profile there is no ConfigMap and each step does nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from controller.kube.api import Kube, KubeError, json_copy
from controller.spoke.addon import AddonRef
from controller.spoke.bookkeeping import Bookkeeping, ConfigMapBookkeeping

__all__ = ["KeptStatus"]

log = logging.getLogger(__name__)

Status = dict[str, Any]


class KeptStatus:
    """The bookkeeping beside the CR `ref` through `kube`, when `keeps` (the acm profile)."""

    def __init__(self, kube: Kube, ref: AddonRef, *, keeps: bool) -> None:
        self._book: Bookkeeping | None = ConfigMapBookkeeping(kube, ref) if keeps else None
        self._owner: dict[str, Any] = {}  # the CR as last read: the ConfigMap's owner
        self._stored: Status | None = None  # what goes with the CR's last stored status
        self.owed = False  # the ConfigMap still holds a rejected change (a restore failed)

    @property
    def separate(self) -> bool:
        """The profile keeps its bookkeeping in a ConfigMap, apart from the CR."""
        return self._book is not None

    def adopt(self, obj: Mapping[str, Any], stored: Status | None) -> None:
        """The CR `obj` was read, and `stored` is what its status resumes from."""
        meta = obj.get("metadata") or {}
        self._owner = {"metadata": {"name": meta.get("name"), "uid": meta.get("uid")}}
        self._stored = stored

    def stored(self, obj: Mapping[str, Any]) -> Status | None:
        """The status to resume from: the CR's, or the bookkeeping kept for it (our copy while
        the ConfigMap still holds a rejected change). Raises StoredStateError when it is not
        JSON, KubeError when the ConfigMap cannot be read."""
        if self._book is None:
            status = obj.get("status")
            return dict(status) if isinstance(status, Mapping) else None
        if self.owed:
            return json_copy(self._stored)
        return self._book.read(dict(obj))

    def write(self, kept: Status | None) -> None:
        """Before the CR: raises InvalidError (never retried as it is) or KubeError."""
        if kept is None or self._book is None:
            return
        self._book.write(kept, self._owner)
        self.owed = False

    def committed(self, kept: Status | None) -> None:
        """The CR now holds the status that goes with `kept`."""
        self._stored = kept

    def restore(self) -> bool:
        """Put the ConfigMap back to what goes with the CR's last stored status; whether it now
        holds that. If not, it stays owed (the machines resume from our copy, and the next
        write puts it back)."""
        if self._book is not None:
            try:
                self._book.write(self._stored, self._owner)
            except KubeError as error:
                log.warning(
                    "cannot put the bookkeeping ConfigMap back; writing it again later",
                    extra={"error": str(error)},
                )
                self.owed = True
                return False
        self.owed = False
        return True

    def abandon(self) -> None:
        """Leadership lost: the next leader resumes from the ConfigMap as it is."""
        self.owed = False
