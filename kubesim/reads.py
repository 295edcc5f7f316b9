"""The read side of kube-apiserver's generic registry: resolving a request to a served
resource, GET, LIST (resourceVersion semantics, selectors, pagination) and the plan of a
WATCH (where it starts, what it filters, when it ends)."""

from __future__ import annotations

import base64
import bisect
import itertools
import json
import random
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kubesim.access import UserInfo
from kubesim.errors import (
    APIError,
    bad_request,
    expired,
    invalid,
    method_not_allowed,
    not_found,
    path_not_found,
    too_large_resource_version,
)
from kubesim.fields import FieldError
from kubesim.resources import ResourceType
from kubesim.routing import RequestInfo, parse_bool
from kubesim.selectors import Selector
from kubesim.store import CompactedError, ObjectKey, Store, Watcher

__all__ = ["ReadRegistry", "Result", "Target", "WatchPlan", "parse_rv"]

Obj = dict[str, Any]
_INT64: Final = (-(2**63), 2**63 - 1)
TOO_LARGE_WAIT: Final = 3.0  # kube-apiserver waits this long for its cache to catch up
_EXPIRED_LIST: Final = "The resourceVersion for the provided list is too old."
_EXPIRED_CONTINUE: Final = (
    "The provided continue parameter is too old to display a consistent list result. You can "
    "start a new list without the continue parameter, or use the continue token in this "
    "response to retrieve the remainder of the results. Continuing with the provided token "
    "results in an inconsistent list - objects that were created, modified, or deleted between "
    "the time the first chunk was returned and now may show up in the list."
)


@dataclass(frozen=True, slots=True)
class Result:
    code: int
    body: Obj
    warnings: tuple[str, ...] = ()
    sort_keys: bool = False  # unstructured (custom resource) JSON: Go sorts map keys


@dataclass(frozen=True, slots=True)
class Target:
    """What a request addresses: a served resource in one version and, below it, a namespace
    ("" for cluster scope or all namespaces), an object name and a subresource."""

    rt: ResourceType
    version: str
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    user: UserInfo | None = None  # who writes (admission needs it); None: the server itself

    @property
    def key(self) -> ObjectKey:
        return (self.namespace, self.name)


@dataclass(slots=True)
class WatchPlan:
    rt: ResourceType
    version: str
    namespace: str | None
    name: str | None
    selector: Selector
    timeout: float
    bookmarks: bool
    watcher: Watcher | None = None
    error: APIError | None = None  # sent as the stream's only event (410 Expired, 504)
    initial_events: int = -1  # with sendInitialEvents: how many events precede the bookmark
    start_rv: int = 0

    def matches(self, obj: Obj | None) -> bool:
        if obj is None:
            return False
        meta = obj.get("metadata") or {}
        return (
            (self.namespace is None or meta.get("namespace", "") == self.namespace)
            and (self.name is None or meta.get("name") == self.name)
            and self.selector.matches(obj)
        )


def parse_rv(text: str, field: str = "resourceVersion") -> int:
    if text.isdigit():
        return int(text)
    raise bad_request(
        f'{field}: Invalid value: "{text}": strconv.ParseUint: parsing "{text}": invalid syntax'
    )


def _list_options_invalid(*errors: FieldError) -> APIError:
    return invalid("meta.k8s.io", "ListOptions", "", list(errors))


def _int_param(query: Mapping[str, str], name: str) -> int | None:
    """An int64 query parameter as the parameter codec converts it (strconv.ParseInt): a 400
    with Go's words for anything else."""
    text = query.get(name, "")
    if not text:
        return None
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise bad_request(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        raise bad_request(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def _watch_timeout(seconds: int | None) -> float:
    """time.Duration(timeoutSeconds) * time.Second, wrapping as Go's int64 does (a wrapped
    negative ends the watch at once); unset or 0 is kube-apiserver's random 30 to 60 minutes."""
    if not seconds:
        return 1800.0 * (1.0 + random.random())
    nanos = (seconds * 1_000_000_000 + 2**63) % 2**64 - 2**63
    return min(nanos / 1e9, threading.TIMEOUT_MAX)


def _encode_continue(rv: int, key: ObjectKey) -> str:
    start = f"{key[0]}/{key[1]}\x00" if key[0] else f"{key[1]}\x00"
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": rv, "start": start})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def _decode_continue(token: str) -> tuple[int, ObjectKey]:
    try:
        raw = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        start = str(raw["start"]).rstrip("\x00")
        namespace, _, name = start.rpartition("/")
        return int(raw["rv"]), (namespace, name)
    except (ValueError, KeyError, TypeError):
        raise bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion "
            "(version meta.k8s.io/v1)"
        ) from None


def _key(obj: Obj) -> ObjectKey:
    meta = obj["metadata"]
    return (meta.get("namespace", ""), meta["name"])


class ReadRegistry:
    def __init__(self, store: Store, types: Sequence[ResourceType]) -> None:
        self.store = store
        self.types = list(types)
        self._served = {(rt.group, v, rt.plural): rt for rt in self.types for v in rt.versions}

    def target(self, info: RequestInfo) -> Target:
        rt = self.resolve(info)
        return Target(
            rt,
            info.api_version,
            info.namespace if rt.namespaced else "",
            info.name,
            info.subresource,
        )

    def served(self, group: str, version: str, plural: str) -> ResourceType:
        """The type serving `plural` of `group`/`version`; KeyError when none does."""
        rt = self._served.get((group, version, plural))
        if rt is None:
            raise KeyError(f"{plural}.{group}/{version} is not served")
        return rt

    def plural_of(self, api_version: str, kind: str) -> str:
        """The resource that serves `kind` in `api_version` (what discovery tells a client)."""
        group, _, version = api_version.rpartition("/")
        for rt in self.types:
            if rt.group == group and rt.kind == kind and version in rt.versions:
                return rt.plural
        raise KeyError(f"{kind} in {api_version} is not served")

    def resolve(self, info: RequestInfo) -> ResourceType:
        """The served resource a request addresses, or the router's 404 / 405."""
        rt = self._served.get((info.api_group, info.api_version, info.resource))
        if rt is None:
            raise path_not_found()
        verbs = rt.verbs
        if info.subresource:
            if not rt.strategy.has_subresource(info.subresource, info.api_version):
                raise path_not_found()
            verbs = rt.subresource_verbs.get(info.subresource, ())
        is_namespace_object = rt.id == ("", "namespaces")
        if not rt.namespaced and info.namespace and not is_namespace_object:
            raise path_not_found()
        if rt.namespaced and not info.namespace:
            if info.name:
                raise path_not_found()
            if info.verb not in ("list", "watch"):
                raise method_not_allowed()
        if info.verb not in verbs:
            raise method_not_allowed()
        return rt

    def out(self, rt: ResourceType, version: str, obj: Obj) -> Obj:
        """The stored object as the requested version presents it."""
        api_version = rt.api_version(version)
        return obj if obj.get("apiVersion") == api_version else {**obj, "apiVersion": api_version}

    def result(
        self, code: int, rt: ResourceType, body: Obj, warnings: Sequence[str] = ()
    ) -> Result:
        return Result(code, body, tuple(warnings), rt.strategy.unstructured)

    def get(self, target: Target) -> Result:
        rt = target.rt
        obj = self.store.get(rt.id, target.key)
        if obj is None:
            raise not_found(rt.group, rt.plural, target.name)
        return self.result(200, rt, self.out(rt, target.version, obj))

    def _wait_until(self, rv: int) -> None:
        if rv > self.store.resource_version and not self.store.wait_for(rv, TOO_LARGE_WAIT):
            raise too_large_resource_version(rv, self.store.resource_version)

    def list_objects(self, target: Target, query: Mapping[str, str]) -> Result:  # noqa: PLR0912
        rt = target.rt
        selector = Selector(
            query.get("labelSelector", ""), query.get("fieldSelector", ""), rt.strategy.field_labels
        )
        rv_text = query.get("resourceVersion", "")
        match = query.get("resourceVersionMatch", "")
        token = query.get("continue", "")
        limit = _int_param(query, "limit")
        if match and match not in ("Exact", "NotOlderThan"):
            raise _list_options_invalid(
                FieldError.not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan"])
            )
        if match and not rv_text:
            raise _list_options_invalid(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden unless resourceVersion is provided",
                )
            )
        if match == "Exact" and rv_text == "0":
            raise _list_options_invalid(
                FieldError.forbidden(
                    "resourceVersionMatch",
                    'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                )
            )
        if token and rv_text not in ("", "0"):
            raise _list_options_invalid(
                FieldError.forbidden(
                    "resourceVersion",
                    "specifying resource version is not allowed when using continue",
                )
            )
        scope = target.namespace or None
        start: ObjectKey | None = None
        gone = _EXPIRED_LIST
        if token:
            list_rv, start = _decode_continue(token)
            gone = _EXPIRED_CONTINUE
        elif match == "Exact":
            list_rv = parse_rv(rv_text)
            self._wait_until(list_rv)
        else:
            if rv_text not in ("", "0"):
                self._wait_until(parse_rv(rv_text))
            list_rv = self.store.resource_version
        try:
            keys, objects = self.store.sorted_at(rt.id, list_rv)
        except CompactedError:
            raise expired(gone) from None
        # In key order, as the watch cache serves it: a page starts after its token's key (or
        # at its namespace) and stops at the first match past its limit.
        low = bisect.bisect_left(keys, (scope, "")) if scope else 0
        high = bisect.bisect_right(keys, (scope, "\U0010ffff")) if scope else len(keys)
        first = max(low, bisect.bisect_right(keys, start)) if start else low
        page = limit if limit is not None and limit > 0 else None
        chosen: list[Obj] = []
        more = False
        for obj in itertools.islice(objects, first, high):
            if selector.matches(obj):
                if page is not None and len(chosen) == page:
                    more = True
                    break
                chosen.append(obj)
        metadata: Obj = {"continue": ""} if rt.strategy.unstructured else {}
        if more:
            metadata["continue"] = _encode_continue(list_rv, _key(chosen[-1]))
            if selector.empty:
                metadata["remainingItemCount"] = high - first - len(chosen)
        metadata["resourceVersion"] = str(list_rv)
        return self.result(200, rt, self.list_body(target, metadata, chosen))

    def list_body(self, target: Target, metadata: Obj, items: list[Obj]) -> Obj:
        rt, version = target.rt, target.version
        if rt.strategy.unstructured:
            shown = [self.out(rt, version, o) for o in items]
        else:  # typed list items carry no TypeMeta
            shown = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        return {
            "kind": rt.list_kind,
            "apiVersion": rt.api_version(version),
            "metadata": metadata,
            "items": shown,
        }

    def open_watch(self, target: Target, query: Mapping[str, str]) -> WatchPlan:
        """Where the watch starts; a start the history cannot serve becomes the ERROR event
        kube-apiserver sends on an open (HTTP 200) stream."""
        rt = target.rt
        selector = Selector(
            query.get("labelSelector", ""), query.get("fieldSelector", ""), rt.strategy.field_labels
        )
        rv_text = query.get("resourceVersion", "")
        bookmarks = parse_bool(query.get("allowWatchBookmarks"))
        initial = parse_bool(query.get("sendInitialEvents"))
        if initial and (query.get("resourceVersionMatch") != "NotOlderThan" or not bookmarks):
            raise _list_options_invalid(
                FieldError.forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the "
                    "WatchList feature gate is enabled and resourceVersionMatch is set to "
                    "NotOlderThan and allowWatchBookmarks is true",
                )
            )
        timeout = _watch_timeout(_int_param(query, "timeoutSeconds"))
        plan = WatchPlan(
            rt,
            target.version,
            target.namespace or None,
            target.name or None,
            selector,
            timeout,
            bookmarks,
        )
        since = None if rv_text in ("", "0") or initial else parse_rv(rv_text)
        if initial and rv_text not in ("", "0"):
            self._wait_until(parse_rv(rv_text))
        if (
            since is not None
            and since > self.store.resource_version
            and not (self.store.wait_for(since, TOO_LARGE_WAIT))
        ):
            plan.error = too_large_resource_version(since, self.store.resource_version)
            return plan
        try:
            with self.store.lock:
                plan.watcher = self.store.watch(rt.id, since)
                plan.start_rv = self.store.resource_version
        except CompactedError as gone:
            plan.error = expired(str(gone))
            return plan
        if initial:
            plan.initial_events = plan.watcher.queued()
        return plan
