"""The addon CR in memory: the real `AddonStore` on `controller.kube.fake.FakeKube`, with the
test's controls for what other actors do to the CR, and a clock the test moves."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from controller.kube.api import ADDON, EVENT, whole
from controller.kube.fake import FakeKube
from controller.spoke.addon import AddonRef, AddonStore, EventRecord

__all__ = ["NAME", "NAMESPACE", "FakeAddonStore", "addon_object"]

NAMESPACE = "open-cluster-management-addon-observability"
NAME = "observability-addon"
_DEFAULT: Any = object()


def addon_object(*, status: dict[str, Any] | None = None, generation: int = 1) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": "observability.open-cluster-management.io/v1beta1",
        "kind": "ObservabilityAddon",
        "metadata": {
            "name": NAME,
            "namespace": NAMESPACE,
            "uid": "uid-1",
            "generation": generation,
        },
        "spec": {},
    }
    if status is not None:
        obj["status"] = status
    return obj


class FakeAddonStore(AddonStore):
    """One CR (or none: `obj=None`) on a `FakeKube`. `faults[op]` lists the exceptions the next
    calls of `op` raise (get, list, replace_status, watch, record_event, count_event);
    `before_replace` runs inside a status PUT before the resourceVersion check (a racing
    writer). `events` and `counted` are the EventRecords the server took (created, or patched
    onto an Event as a repeat), `names` the names the created ones got."""

    def __init__(self, obj: dict[str, Any] | None = _DEFAULT) -> None:
        self.fake = FakeKube()
        super().__init__(self.fake, AddonRef(NAMESPACE, NAME))
        self.events: list[EventRecord] = []
        self.counted: list[EventRecord] = []
        self.names: list[str] = []
        if obj is _DEFAULT:
            obj = addon_object()
        if obj is not None:
            self.fake.put(ADDON, obj)

    def record_event(self, record: EventRecord) -> str:
        self._fault("record_event")
        name = super().record_event(record)
        self.events.append(record)
        self.names.append(name)
        return name

    def count_event(self, record: EventRecord) -> None:
        self._fault("count_event")
        super().count_event(record)
        self.counted.append(record)

    def delete_events(self) -> None:
        """Every Event on the CR goes away (their TTL ran out)."""
        for event in self.fake.list(EVENT, NAMESPACE, keep=whole).items:
            self.fake.delete(EVENT, NAMESPACE, event["metadata"]["name"])

    def _fault(self, op: str) -> None:
        pending = self.faults.get(op)
        if pending:
            raise pending.pop(0)

    # ---- what the test reads -----------------------------------------------------------------

    @property
    def faults(self) -> dict[str, list[Exception]]:
        return self.fake.faults

    @property
    def puts(self) -> list[dict[str, Any]]:
        """The statuses of the PUTs that succeeded."""
        return self.fake.written

    @property
    def conflicts(self) -> int:
        return self.fake.conflicts

    @property
    def gets(self) -> int:
        return len(self.fake.ops("get"))

    @property
    def status(self) -> dict[str, Any]:
        stored = self.fake.stored(ADDON, NAMESPACE, NAME)
        assert stored is not None
        return copy.deepcopy(stored.get("status") or {})

    @property
    def open_watches(self) -> int:
        return self.fake.open_watches

    @property
    def before_replace(self) -> Callable[[], object] | None:
        return self.fake.before.get("replace_status")

    @before_replace.setter
    def before_replace(self, hook: Callable[[FakeAddonStore], object]) -> None:
        self.fake.before["replace_status"] = lambda: hook(self)

    @property
    def obj(self) -> dict[str, Any] | None:
        return self.fake.stored(ADDON, NAMESPACE, NAME)

    @obj.setter
    def obj(self, obj: dict[str, Any]) -> None:
        """The CR becomes `obj` (a deleted one back, or one created anew)."""
        self.fake.put(ADDON, obj)

    # ---- what other actors do to the CR ------------------------------------------------------

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.fake.put(ADDON, obj)

    def change_spec(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Someone edits the spec: the generation moves."""
        return self.fake.edit(ADDON, NAMESPACE, NAME, lambda obj: obj.update(spec=spec))

    def change_status(self, mutate: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        """Another writer changes the status (no precondition)."""
        return self.fake.edit(
            ADDON, NAMESPACE, NAME, lambda obj: mutate(obj.setdefault("status", {}))
        )

    def delete(self) -> None:
        self.fake.delete(ADDON, NAMESPACE, NAME)

    def others_write(self, count: int) -> None:
        self.fake.others_write(count)

    def disconnect(self) -> None:
        """End every open watch, as a dropped connection does."""
        self.fake.disconnect()

    def while_disconnected(self, change: Callable[[], object], *, compact: bool) -> None:
        """Drop every watch, then `change` (and compact the history) before any watch can come
        back: the controller's next watch starts from a version older than the change."""
        with self.fake.lock:
            self.fake.disconnect()
            change()
            if compact:
                self.fake.compact()
