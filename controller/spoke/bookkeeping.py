"""The bookkeeping ConfigMap of the acm profile: `<addon>-status`, owned by the addon CR.

The upstream CRD prunes everything but the conditions' five fields, so what the controller must
keep across a restart or a failover (open windows, generations, pending states, history: the
whole of `statemachines.stored.to_status`, as `statemachines.placement.bookkeeping` gives it)
is one JSON document under one key of this ConfigMap. The interface is two calls, `read` and
`write`, on the `Kube` seam (`controller.kube.fake.FakeKube` serves it in unit tests).

It is written before the CR's status (`Reconciler._flush`): a crash between the two leaves a
ConfigMap ahead of the CR, which the next leader writes through to the CR; never a CR ahead
of what a restart resumes from. A CR write then rejected as invalid puts the ConfigMap back to
what it held before (`Reconciler._roll_back`, with `write(None)` when nothing was kept yet), so
a rolled-back change survives in neither. Only the leader writes it; a 409 means someone else
did (an old leader's last write, a person): the write reads again and puts the leader's state in.

RBAC: `get` and `update` on this one name; `create` cannot be narrowed to a name (a create's
URL has none), so it is granted for ConfigMaps in the addon's namespace (see the README).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from controller.kube.api import CONFIG_MAP, ConflictError, Kube, NotFoundError
from controller.spoke.addon import AddonRef
from statemachines.errors import StoredStateError
from statemachines.placement import KEY, bookkeeping_text

__all__ = ["CONFIG_MAP", "KEY", "Bookkeeping", "ConfigMapBookkeeping", "config_map_name"]

log = logging.getLogger(__name__)

_ATTEMPTS = 3


def config_map_name(addon: str) -> str:
    return f"{addon}-status"


class Bookkeeping(Protocol):
    def read(self, owner: Mapping[str, Any]) -> dict[str, Any] | None:
        """The bookkeeping kept for the CR `owner` (None: none yet, or it belongs to an earlier
        CR of the same name). Raises KubeError, StoredStateError (not a JSON object)."""
        ...

    def write(self, data: Mapping[str, Any] | None, owner: Mapping[str, Any]) -> bool:
        """Keep `data` for the CR `owner` (None: nothing, as before the first write); whether
        an API call changed anything. Raises KubeError."""
        ...


class ConfigMapBookkeeping:
    """`Bookkeeping` in the ConfigMap `<addon>-status` beside the CR, through the `Kube` seam."""

    def __init__(self, kube: Kube, ref: AddonRef) -> None:
        self.ref = AddonRef(ref.namespace, config_map_name(ref.name))
        self._addon = ref.name
        self._resource = ref.resource
        self._kube = kube
        self._last: dict[str, Any] | None = None  # the ConfigMap as last read or written

    def read(self, owner: Mapping[str, Any]) -> dict[str, Any] | None:
        self._last = self._get()
        if self._last is None or not _owned_by(self._last, owner):
            return None
        text = (self._last.get("data") or {}).get(KEY)
        if not text:
            return None
        try:
            data = json.loads(text)
        except ValueError as error:
            raise StoredStateError(f"ConfigMap {self.ref} data.{KEY}", str(error)) from error
        if not isinstance(data, dict):
            raise StoredStateError(f"ConfigMap {self.ref} data.{KEY}", "not a JSON object")
        return data

    def write(self, data: Mapping[str, Any] | None, owner: Mapping[str, Any]) -> bool:
        text = None if data is None else bookkeeping_text(dict(data))
        for _ in range(_ATTEMPTS):
            current = self._last if self._last is not None else self._get()
            if current is None and text is None:
                return False  # nothing kept, and nothing to keep
            body = self._desired(current, text, owner)
            if current is not None and body == current:
                self._last = current
                return False
            try:
                if current is None:
                    self._last = self._kube.create(CONFIG_MAP, self.ref.namespace, body)
                else:
                    self._last = self._kube.replace(
                        CONFIG_MAP, self.ref.namespace, self.ref.name, body
                    )
                return True
            except ConflictError:  # someone else wrote it, or created it first: read again
                log.info("the bookkeeping ConfigMap changed under us; reading it again")
                self._last = None
        raise ConflictError(f"ConfigMap {self.ref}: still conflicting", status=409)

    def _get(self) -> dict[str, Any] | None:
        try:
            return self._kube.get(CONFIG_MAP, self.ref.namespace, self.ref.name)
        except NotFoundError:
            return None

    def _desired(
        self, current: dict[str, Any] | None, text: str | None, owner: Mapping[str, Any]
    ) -> dict[str, Any]:
        """`current` (or a new ConfigMap) holding `text` (None: not the key), owned by the CR
        `owner` alone."""
        base = current or {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}
        meta = {
            **(base.get("metadata") or {}),
            "name": self.ref.name,
            "namespace": self.ref.namespace,
            "ownerReferences": [
                {
                    "apiVersion": self._resource.api_version,
                    "kind": self._resource.kind,
                    "name": self._addon,
                    "uid": (owner.get("metadata") or {}).get("uid"),
                    "controller": True,
                }
            ],
        }
        data = {k: v for k, v in (base.get("data") or {}).items() if k != KEY}
        if text is not None:
            data[KEY] = text
        return {**base, "metadata": meta, "data": data}


def _owned_by(config_map: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    refs = (config_map.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == uid for r in refs)
