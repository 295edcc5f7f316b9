"""The bookkeeping ConfigMap of the acm profile: `<addon>-status`, owned by the addon CR.

The upstream CRD prunes everything but the conditions' five fields, so what the controller must
keep across a restart or a failover (open windows, generations, pending states, history: the
whole of `statemachines.stored.to_status`, as `statemachines.placement.bookkeeping` gives it)
is one JSON document under one key of this ConfigMap. The interface is two calls, `read` and
`write`, so that it can move onto any read-mutate-write loop.

It is written before the CR's status (`Reconciler._flush`): a crash between the two leaves a
ConfigMap ahead of the CR, which the next leader writes through to the CR; never a CR ahead
of what a restart resumes from. Only the leader writes it; a 409 means someone else did (an
old leader's last write, a person): the write reads again and puts the leader's state in.

RBAC: `get` and `update` on this one name; `create` cannot be narrowed to a name (a create's
URL has none), so it is granted for ConfigMaps in the addon's namespace (see the README).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Protocol

from kubernetes import client
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from controller.kube.addons import GROUP, KIND, VERSION, AddonRef, ConflictError, StoreError
from statemachines.errors import StoredStateError

__all__ = ["KEY", "Bookkeeping", "KubeBookkeeping", "config_map_name"]

log = logging.getLogger(__name__)

KEY = "status.json"
_ATTEMPTS = 3


def config_map_name(addon: str) -> str:
    return f"{addon}-status"


class Bookkeeping(Protocol):
    def read(self, owner: Mapping[str, Any]) -> dict[str, Any] | None:
        """The bookkeeping kept for the CR `owner` (None: none yet, or it belongs to an earlier
        CR of the same name). Raises StoreError, StoredStateError (not a JSON object)."""
        ...

    def write(self, data: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
        """Keep `data` for the CR `owner`; whether an API call changed anything.
        Raises StoreError."""
        ...


class KubeBookkeeping:
    """`Bookkeeping` in the ConfigMap `<addon>-status` beside the CR, on the official client."""

    def __init__(
        self, api_client: client.ApiClient, ref: AddonRef, *, request_timeout: float = 10.0
    ) -> None:
        self.ref = AddonRef(ref.namespace, config_map_name(ref.name))
        self._addon = ref.name
        self._core = client.CoreV1Api(api_client)
        self._timeout = request_timeout
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

    def write(self, data: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        for _ in range(_ATTEMPTS):
            current = self._last
            if current is None:
                current = self._last = self._get()
            body = _desired(current, text, owner, self.ref, self._addon)
            if current is not None and body == current:
                return False
            try:
                self._last = self._put(body, create=current is None)
                return True
            except ConflictError:
                log.info("the bookkeeping ConfigMap changed under us; reading it again")
                self._last = None
        raise ConflictError(f"ConfigMap {self.ref}: still conflicting", status=409)

    def _get(self) -> dict[str, Any] | None:
        try:
            found = self._core.read_namespaced_config_map(
                self.ref.name, self.ref.namespace, _request_timeout=self._timeout
            )
        except ApiException as error:
            if error.status == 404:
                return None
            raise _error(error, f"get ConfigMap {self.ref}") from error
        except (HTTPError, OSError) as error:
            raise _error(error, f"get ConfigMap {self.ref}") from error
        return _plain(self._core.api_client, found)

    def _put(self, body: dict[str, Any], *, create: bool) -> dict[str, Any]:
        try:
            if create:
                stored = self._core.create_namespaced_config_map(
                    self.ref.namespace,
                    body,  # type: ignore[arg-type]  # the client sends a dict as it is
                    _request_timeout=self._timeout,
                )
            else:
                stored = self._core.replace_namespaced_config_map(
                    self.ref.name,
                    self.ref.namespace,
                    body,  # type: ignore[arg-type]  # the client sends a dict as it is
                    _request_timeout=self._timeout,
                )
        except (ApiException, HTTPError, OSError) as error:
            verb = "create" if create else "replace"
            raise _error(error, f"{verb} ConfigMap {self.ref}") from error
        return _plain(self._core.api_client, stored)


def _owned_by(config_map: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    uid = (owner.get("metadata") or {}).get("uid")
    refs = (config_map.get("metadata") or {}).get("ownerReferences") or []
    return any(r.get("uid") == uid for r in refs)


def _desired(
    current: dict[str, Any] | None, text: str, owner: Mapping[str, Any], ref: AddonRef, addon: str
) -> dict[str, Any]:
    """`current` (or a new ConfigMap) holding `text`, owned by the CR `owner` alone."""
    meta = dict((current or {}).get("metadata") or {"name": ref.name, "namespace": ref.namespace})
    meta["ownerReferences"] = [
        {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "name": addon,
            "uid": (owner.get("metadata") or {}).get("uid"),
            "controller": True,
        }
    ]
    data = {**((current or {}).get("data") or {}), KEY: text}
    return {
        **(current or {"apiVersion": "v1", "kind": "ConfigMap"}),
        "metadata": meta,
        "data": data,
    }


def _plain(api: client.ApiClient, obj: Any) -> dict[str, Any]:
    """The client's model as the API's JSON (camelCase keys, no None values)."""
    plain: dict[str, Any] = api.sanitize_for_serialization(obj)  # type: ignore[no-untyped-call]
    plain.setdefault("apiVersion", "v1")
    plain.setdefault("kind", "ConfigMap")
    return plain


def _error(error: Exception, what: str) -> StoreError:
    if isinstance(error, ApiException):
        status = int(error.status) if error.status else None
        kind = ConflictError if status == 409 else StoreError
        return kind(f"{what}: {status} {error.reason or ''}".rstrip(), status=status)
    return StoreError(f"{what}: {type(error).__name__}: {error}")
