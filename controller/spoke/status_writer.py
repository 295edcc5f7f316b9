"""Writing the addon CR's status through the one update loop (`controller.kube.update`): read,
merge ours in, skip if unchanged, write with the read resourceVersion, and on 409 Conflict start
over from a fresh read (a bounded number of times). `SpokeStatus` keeps the worker's side of
it: whether the CR lags behind the machines, the newest CR the worker has seen, and when a
failed write may be tried again.

The controller owns the standard condition types, `Ready`, `ResourcesHealthy`, one condition
type per collector of its profile, and the status fields of `statemachines.stored.OWNED_FIELDS`
(`resources` among them). Anything else on the
status — a condition type of someone else's, a field of another controller — is kept as it is,
in its place in the list: the CR the write starts from is the newest the worker has seen (its
own last write, or a watch event that came after it), and the resourceVersion precondition
makes sure nothing another writer put there in the meantime is lost. A status that is already
right costs no write at all.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from controller.kube.api import (
    ConflictError,
    InvalidError,
    KubeError,
    NotFoundError,
    WatchEvent,
    json_copy,
    resource_version,
)
from controller.kube.update import Updated, update_status
from controller.spoke.addon import AddonStore
from controller.spoke.metrics import ControllerMetrics
from statemachines.health import RESOURCES_HEALTHY
from statemachines.stored import OWNED_FIELDS
from statemachines.vocabulary import READY, ConditionType, Profile

__all__ = [
    "SpokeStatus",
    "StatusHook",
    "StatusWriter",
    "merged_status",
    "needs_write",
    "owned_types",
]

StatusHook = Callable[[dict[str, Any]], None]

log = logging.getLogger(__name__)

CONDITIONS = "conditions"
RESOURCES = "resources"


def owned_types(profile: Profile) -> frozenset[str]:
    """The condition types this controller writes; every other type belongs to someone else."""
    collectors = (c.condition_type for c in profile.collectors)
    return frozenset({*ConditionType, READY, *collectors, RESOURCES_HEALTHY})


def merged_status(
    current: Mapping[str, Any], desired: Mapping[str, Any], *, owned: frozenset[str]
) -> dict[str, Any]:
    """`current` with our conditions in place of our types and our own fields replaced.

    A foreign condition keeps its position; ours take the position of the old condition of the
    same type, new ones go to the end in the order of `desired`; one of ours that `desired` no
    longer has (a collector that is not configured any more) is dropped.
    """
    desired = json_copy(desired)  # the result must not alias the caller's dicts
    ours = {c["type"]: c for c in desired.get(CONDITIONS) or [] if c.get("type") in owned}
    placed: set[str] = set()
    conditions: list[Any] = []
    for condition in current.get(CONDITIONS) or []:
        type_ = condition.get("type") if isinstance(condition, Mapping) else None
        if type_ not in owned:
            conditions.append(condition)
        elif type_ in ours and type_ not in placed:
            conditions.append(ours[type_])
            placed.add(type_)
    conditions += [c for type_, c in ours.items() if type_ not in placed]
    others = {k: v for k, v in current.items() if k not in OWNED_FIELDS}
    ours_whole = {k: desired[k] for k in OWNED_FIELDS if k in desired}
    return {**others, CONDITIONS: conditions, **ours_whole}


def needs_write(
    obj: Mapping[str, Any], desired: Mapping[str, Any], *, owned: frozenset[str]
) -> bool:
    """Whether the CR as seen (say, in a watch event) lacks part of the desired status."""
    current = obj.get("status") or {}
    return merged_status(current, desired, owned=owned) != current


class StatusWriter:
    """library-go's status writer: `update_status` around the pure `merged_status`."""

    def __init__(
        self,
        store: AddonStore,
        *,
        owned: frozenset[str],
        attempts: int = 5,
        on_conflict: Callable[[], None] | None = None,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self._store = store
        self._owned = owned
        self._attempts = attempts
        self._on_conflict = on_conflict or (lambda: None)

    def write(
        self, desired: Mapping[str, Any], *, known: Mapping[str, Any] | None = None
    ) -> Updated:
        """Make the CR's status hold `desired` (conditions and collectors).

        `known` is the newest CR the caller has seen: the first attempt starts from it and
        saves a read; a 409 says someone wrote since, and every retry reads afresh.

        Raises ConflictError when every attempt met a newer CR, NotFoundError when the CR
        is gone, KubeError when the API server fails otherwise; the caller retries later.
        """

        def conflicted(attempt: int, error: ConflictError) -> None:
            self._on_conflict()
            log.info("status write conflicted; reading again", extra={"attempt": attempt})

        return update_status(
            self._store.get,
            lambda current: merged_status(current, desired, owned=self._owned),
            self._store.replace_status,
            what=f"status of {self._store.ref}",
            attempts=self._attempts,
            first=known,
            on_conflict=conflicted,
        )


class SpokeStatus:
    """The worker's view of the CR's status, used from the worker's thread only.

    It knows whether the CR lags behind the machines (`owed`), the newest CR the worker has
    seen (its own last write or read, or a later watch event: a write starts from it, so the
    steady state and a spec change cost one PUT, no GET and no 409), the resourceVersions of
    our own writes (so that their watch events cost nothing), and how many changes the next write
    carries. After every successful write, each of `hooks` gets the status written (the hub
    replication subscribes there).
    """

    def __init__(
        self,
        store: AddonStore,
        *,
        owned: frozenset[str],
        metrics: ControllerMetrics,
        attempts: int = 5,
    ) -> None:
        self.hooks: list[StatusHook] = []
        self._owed = False
        self.changes = 0  # changes owed to the next write (a rejected one is blamed on them)
        self.last: dict[str, Any] = {}  # the status as last read or written
        self._owned = owned
        self._metrics = metrics
        self._writer = StatusWriter(
            store, owned=owned, attempts=attempts, on_conflict=metrics.status_conflicts.inc
        )
        self._known: dict[str, Any] | None = None
        self._echoes: deque[str] = deque(maxlen=64)  # versions of our recent writes
        self._unechoed: deque[str] = deque(maxlen=64)  # ... whose watch event has not come yet

    def adopt(self, obj: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
        """The CR as just read (at start, by a new leader, a new CR): is our part right?"""
        self._known = json_copy(dict(obj))
        self._unechoed.clear()
        self.last = json_copy(obj.get("status") or {})
        self._owed = needs_write(obj, desired, owned=self._owned)
        self.changes = int(self._owed)

    @property
    def owed(self) -> bool:
        """A change of the machines is not on the CR yet."""
        return self._owed

    def owe(self) -> None:
        """The machines changed: the CR must be written."""
        self._owed = True
        self.changes += 1

    def forgive(self) -> None:
        """Nothing is owed any more (leadership lost; rolled back to what the CR holds)."""
        self._owed, self.changes = False, 0

    def seen(self, event: WatchEvent) -> bool:
        """A watch event: False for the echo of our own write, True for someone else's.

        A watch delivers events in the server's order, so someone else's write that comes
        before the echo of our last write may be older than that write, so the next write
        reads the CR first; one that comes after it is the newest CR, and the next write
        starts from it (a spec change then costs no read and no 409).
        """
        version = resource_version(event.object)
        if version in self._unechoed:
            while self._unechoed.popleft() != version:
                pass
        if version in self._echoes:
            return False
        # Older than our last write, or newer with our echo lost: only a read tells.
        self._known = json_copy(event.object) if not self._unechoed else None
        return True

    def lags(self, obj: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
        """Whether the CR as an event shows it lacks part of `desired`. It may be older than
        our last write; then the write finds nothing to do and costs no PUT."""
        return needs_write(obj, desired, owned=self._owned)

    def write(self, desired: Mapping[str, Any]) -> None:
        """Make the CR hold `desired`. A failure is logged and leaves `owed` set (the worker's
        loop tries again after its backoff); NotFoundError is raised (after that) for the caller
        to note, and InvalidError at once (sending the status again cannot help: the caller
        rolls back)."""
        try:
            result = self._writer.write(desired, known=self._known)
        except InvalidError:
            self._known = None
            raise
        except KubeError as error:
            self._known = None
            self._metrics.status_failures.inc()
            log.warning("cannot write the status; retrying", extra={"error": str(error)})
            if isinstance(error, NotFoundError):
                raise
            return
        self._owed, self.changes = False, 0
        self._known = result.obj
        self.last = json_copy(result.obj.get("status") or {})
        if result.written:
            self._announce(result.obj)

    def _announce(self, obj: Mapping[str, Any]) -> None:
        version = resource_version(obj)
        self._echoes.append(version)
        self._unechoed.append(version)
        self._metrics.status_writes.inc()
        log.info("status written", extra={"resourceVersion": version})
        self.tell_hooks()

    def tell_hooks(self) -> None:
        """Hand the status as last read or written to every hook; also when the CR already
        held ours (a new leader hands on what it read, as if it had just written it)."""
        for hook in list(self.hooks):
            try:
                hook(json_copy(self.last))
            except Exception:
                log.exception("an on_status_written hook failed")
