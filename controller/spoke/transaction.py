"""One status write as a transaction over the objects that hold the status: in the acm profile
the bookkeeping ConfigMap first, then the CR's status (a restart resumes from the ConfigMap, so it
must never lag behind the CR); in the seed profile the CR alone. A write the API server refuses
as invalid (400, 413, 422) cannot succeed by trying again: `undo` forgets it and puts the
ConfigMap back to what went with the CR's last stored status."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import Enum
from typing import Any

from controller.kube.api import InvalidError, KubeError, NotFoundError
from controller.spoke.kept import KeptStatus
from controller.spoke.status_writer import SpokeStatus

__all__ = ["StatusTransaction", "Written"]

log = logging.getLogger(__name__)


class Written(Enum):
    DONE = "done"  # on the CR (or nothing was owed)
    LATER = "later"  # failed for now: tried again after the worker's backoff
    MISSING = "missing"  # the CR is gone
    REJECTED = "rejected"  # refused as invalid: `undo()` it


@dataclass
class StatusTransaction:
    status: SpokeStatus
    kept: KeptStatus

    def write(self, on_cr: dict[str, Any], bookkeeping: Any) -> tuple[Written, str]:
        """Write both, the ConfigMap first; the outcome, and the API server's words when it
        refused them."""
        try:
            self.kept.write(bookkeeping)
        except InvalidError as error:  # as for the CR below: never retried as it is
            return Written.REJECTED, str(error)
        except KubeError as error:
            log.warning(
                "cannot write the bookkeeping ConfigMap; retrying", extra={"error": str(error)}
            )
            return Written.LATER, ""
        try:
            self.status.write(on_cr)
        except NotFoundError:
            return Written.MISSING, ""
        except InvalidError as error:  # sending it again cannot help: see SpokeStatus.write
            return Written.REJECTED, str(error)
        if self.status.owed:
            return Written.LATER, ""
        self.kept.committed(bookkeeping)
        return Written.DONE, ""

    def undo(self) -> bool:
        """After a rejection: nothing owed any more, the ConfigMap put back to the CR's last
        stored status; False when that write failed (the next write puts it back)."""
        self.status.forgive()
        return self.kept.restore()
