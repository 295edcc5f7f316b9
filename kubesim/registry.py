"""The write side of kube-apiserver's generic registry, in its order of checks: decode (400),
preconditions and resourceVersion (409, or 422 when a custom resource omits it), the
strategy's prepare and validation (422), admission (404 for a missing namespace), storage
(409 AlreadyExists); no-op writes are answered without a new resourceVersion."""

from __future__ import annotations

import contextlib
import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesim.access import Authenticator
from kubesim.codec import clone, decode_json, format_time, now
from kubesim.decoding import decode_body, dry_run_of
from kubesim.errors import (
    APIError,
    already_exists,
    bad_request,
    conflict,
    invalid,
    not_found,
    success_status,
    unsupported_media_type,
)
from kubesim.fields import FieldError, GoLiteral
from kubesim.meta import (
    validate_object_meta,
    validate_object_meta_update,
)
from kubesim.patch import APPLY_PATCH, apply_patch
from kubesim.rbac import Authorizer
from kubesim.reads import ReadRegistry, Result, Target, parse_rv
from kubesim.resources import ResourceType
from kubesim.reviews import answer_review
from kubesim.selectors import Selector
from kubesim.store import ObjectKey, Store

__all__ = ["Registry"]

Obj = dict[str, Any]
_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_NAMESPACES: Final = ("", "namespaces")


def _key(obj: Obj) -> ObjectKey:
    return (obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


class _Raced(Exception):  # noqa: N818 - not an error: another write came first, try again
    pass


Admit = Callable[[str, Target, Obj | None, Obj | None], list[str]]
"""(operation, target, object, old object) -> warnings; raises the APIError of a refusal."""


class Registry(ReadRegistry):
    def __init__(
        self,
        store: Store,
        types: list[ResourceType],
        authenticator: Authenticator,
    ) -> None:
        super().__init__(store, types)
        self._authenticator = authenticator
        self.admit: Admit | None = None  # the server's admission, once it has one
        self.authorizer: Authorizer | None = None  # RBAC's, for access reviews; None: allow all

    def _errors(self, rt: ResourceType, version: str, obj: Obj) -> list[FieldError]:
        errors = validate_object_meta(
            obj["metadata"], namespaced=rt.namespaced, name_check=rt.strategy.name_errors
        )
        if obj.get("kind") != rt.kind:
            errors.append(FieldError.invalid("kind", obj.get("kind"), f"must be {rt.kind}"))
        return errors

    # -- create -----------------------------------------------------------------------------

    def create(self, target: Target, body: Any, query: Mapping[str, str]) -> Result:
        rt = target.rt
        if not rt.stored:
            return self._review(target, body, query)
        dry_run = dry_run_of(query)
        obj, warnings = decode_body(rt, target.version, body, query)
        meta = obj["metadata"]
        if rt.namespaced:
            meta.setdefault("namespace", target.namespace)
            if meta["namespace"] != target.namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the "
                    "namespace sent on the request"
                )
        else:
            meta.pop("namespace", None)
        return self._create(target, obj, dry_run, warnings)

    def _create(self, target: Target, obj: Obj, dry_run: bool, warnings: list[str]) -> Result:
        rt, version = target.rt, target.version
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise APIError(500, "", "resourceVersion should not be set on objects to be created")
        if not meta.get("name") and meta.get("generateName"):
            suffix = "".join(random.choice(_SUFFIX_ALPHABET) for _ in range(5))
            meta["name"] = meta["generateName"] + suffix
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = format_time(now())
        for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "generation", "selfLink"):
            meta.pop(key, None)
        rt.strategy.prepare_create(obj, version)
        errors = self._errors(rt, version, obj) + rt.strategy.validate(obj, version)
        if errors:
            raise invalid(rt.group, rt.kind, meta.get("name", ""), errors)
        namespace, name = meta.get("namespace", ""), meta["name"]
        if rt.namespaced and self.store.get(_NAMESPACES, ("", namespace)) is None:
            raise not_found("", "namespaces", namespace)
        if self.admit is not None and target.user is not None:  # never under the store's lock
            warnings = [*warnings, *self.admit("CREATE", target, obj, None)]
        with self.store.lock:
            if self.store.get(rt.id, (namespace, name)) is not None:
                raise already_exists(rt.group, rt.plural, name)
            stored = obj if dry_run else self.store.commit(rt.id, (namespace, name), obj)
        return self.result(201, rt, self.out(rt, version, stored), warnings)

    def _review(self, target: Target, body: Any, query: Mapping[str, str]) -> Result:
        """A review (reviews.py): answered, never stored."""
        rt = target.rt
        obj, warnings = decode_body(rt, target.version, body, query)
        spec = obj.setdefault("spec", {})
        status = answer_review(rt.kind, spec, target.user, self._authenticator, self.authorizer)
        answer = {
            "kind": rt.kind,
            "apiVersion": rt.api_version(target.version),
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return self.result(201, rt, answer, warnings)

    # -- update and patch -------------------------------------------------------------------

    def update(self, target: Target, body: Any, query: Mapping[str, str]) -> Result:
        rt, name, namespace = target.rt, target.name, target.namespace
        dry_run = dry_run_of(query)
        obj, warnings = decode_body(rt, target.version, body, query)
        meta = obj["metadata"]
        if meta.get("name", "") != name:
            raise bad_request(
                f"the name of the object ({meta.get('name', '')}) does not match "
                f"the name on the URL ({name})"
            )
        if rt.namespaced:
            if meta.get("namespace", namespace) != namespace:
                raise bad_request(
                    f"the namespace of the object ({meta['namespace']}) does not "
                    f"match the namespace on the request ({namespace})"
                )
            meta["namespace"] = namespace
        else:
            meta.pop("namespace", None)
        while True:  # GuaranteedUpdate: again from the new object when another write came first
            old = self.store.get(rt.id, target.key)
            if old is None:
                if rt.strategy.allow_create_on_update and not target.subresource:
                    meta.pop("resourceVersion", None)
                    return self._create(target, obj, dry_run, warnings)
                raise not_found(rt.group, rt.plural, name)
            with contextlib.suppress(_Raced):
                return self._update(
                    target, old, clone(obj), dry_run, warnings, uid_precondition=True
                )

    def patch(
        self, target: Target, body: bytes, content_type: str, query: Mapping[str, str]
    ) -> Result:
        rt = target.rt
        kind = content_type.split(";", maxsplit=1)[0].strip().lower()
        if kind not in rt.strategy.patch_types or kind == APPLY_PATCH:
            raise unsupported_media_type(rt.strategy.patch_types)
        try:
            document = decode_json(body)
        except ValueError as exc:
            raise bad_request(f"error decoding patch: {exc}") from None
        dry_run = dry_run_of(query)
        while True:  # the patch applies to the object it is stored over
            old = self.store.get(rt.id, target.key)
            if old is None:
                raise not_found(rt.group, rt.plural, target.name)
            current = clone(self.out(rt, target.version, old))
            patched = apply_patch(kind, current, document, rt.strategy.merge_lists)
            obj, warnings = decode_body(rt, target.version, patched, query)
            if rt.namespaced:
                obj["metadata"].setdefault("namespace", target.namespace)
            with contextlib.suppress(_Raced):
                return self._update(target, old, obj, dry_run, warnings, uid_precondition=False)

    def _check_preconditions(
        self, rt: ResourceType, old_meta: Obj, meta: Obj, uid_precondition: bool
    ) -> None:
        name = old_meta["name"]
        if uid_precondition and meta.get("uid") and meta["uid"] != old_meta["uid"]:
            raise conflict(
                rt.group,
                rt.plural,
                name,
                f"Precondition failed: UID in precondition: {meta['uid']}, UID in "
                f"object meta: {old_meta['uid']}",
            )
        requested = meta.get("resourceVersion", "")
        if not requested:
            if not rt.strategy.allow_unconditional_update:
                raise invalid(
                    rt.group,
                    rt.plural,
                    name,
                    [
                        FieldError.invalid(
                            "metadata.resourceVersion",
                            GoLiteral("0x0"),
                            "must be specified for an update",
                        )
                    ],
                )
        elif parse_rv(requested, "metadata.resourceVersion") != int(old_meta["resourceVersion"]):
            raise conflict(rt.group, rt.plural, name)

    def _update(
        self,
        target: Target,
        old: Obj,
        new: Obj,
        dry_run: bool,
        warnings: list[str],
        *,
        uid_precondition: bool,
    ) -> Result:
        rt, version = target.rt, target.version
        old_meta = old["metadata"]
        name = old_meta["name"]
        self._check_preconditions(rt, old_meta, new["metadata"], uid_precondition)
        meta = new["metadata"]
        meta["resourceVersion"] = old_meta["resourceVersion"]
        meta.pop("generation", None)
        if "generation" in old_meta:
            meta["generation"] = old_meta["generation"]
        new = rt.strategy.prepare_update(new, old, target.subresource, version)
        meta = new["metadata"]
        meta.setdefault("uid", old_meta["uid"])
        for field in ("creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
            if field in old_meta:
                meta[field] = old_meta[field]
            else:
                meta.pop(field, None)
        errors = (
            self._errors(rt, version, new)
            + validate_object_meta_update(meta, old_meta)
            + rt.strategy.validate_update(new, old, version)
        )
        if errors:
            raise invalid(rt.group, rt.kind, name, errors)
        if self.admit is not None and target.user is not None:  # never under the store's lock
            warnings = [*warnings, *self.admit("UPDATE", target, new, old)]
        key: ObjectKey = (old_meta.get("namespace", ""), name)
        with self.store.lock:
            if self.store.get(rt.id, key) is not old:
                raise _Raced
            if new == old or dry_run:
                return self.result(200, rt, self.out(rt, version, new), warnings)
            stored = self.store.commit(rt.id, key, new)
            if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                self.store.commit(rt.id, key, None)  # the last finalizer is gone: delete now
        return self.result(200, rt, self.out(rt, version, stored), warnings)

    # -- delete -----------------------------------------------------------------------------

    def delete(self, target: Target, body: Any, query: Mapping[str, str]) -> Result:
        rt, name = target.rt, target.name
        options = body if isinstance(body, dict) else {}
        dry_run = dry_run_of(query) or "All" in (options.get("dryRun") or [])
        preconditions = options.get("preconditions") or {}
        while True:
            old = self.store.get(rt.id, target.key)
            if old is None:
                raise not_found(rt.group, rt.plural, name)
            meta = old["metadata"]
            for field, label in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                wanted = preconditions.get(field)
                if wanted and wanted != meta[field]:
                    raise conflict(
                        rt.group,
                        rt.plural,
                        name,
                        f"Precondition failed: {label} in precondition: {wanted}, "
                        f"{label} in object meta: {meta[field]}",
                    )
            with contextlib.suppress(_Raced):
                return self._delete(target, old, dry_run)

    def _delete(self, target: Target, old: Obj, dry_run: bool) -> Result:
        """Admission, then (under the store's lock, if `old` is still what is stored) the
        deletion; raises _Raced when another write came first."""
        meta = old["metadata"]
        if self.admit is not None and target.user is not None:  # never under the store's lock
            self.admit("DELETE", target, None, old)
        key: ObjectKey = (meta.get("namespace", ""), meta["name"])
        with self.store.lock:
            if self.store.get(target.rt.id, key) is not old:
                raise _Raced
            return self._deleted(target, old, key, dry_run)

    def _deleted(self, target: Target, old: Obj, key: ObjectKey, dry_run: bool) -> Result:
        rt, version = target.rt, target.version
        meta = old["metadata"]
        if meta.get("finalizers"):
            if meta.get("deletionTimestamp"):
                return self.result(200, rt, self.out(rt, version, old))
            marked = clone(old)
            marked["metadata"]["deletionTimestamp"] = format_time(now())
            marked["metadata"]["deletionGracePeriodSeconds"] = 0
            stored = marked if dry_run else self.store.commit(rt.id, key, marked)
            return self.result(200, rt, self.out(rt, version, stored))
        if dry_run:
            return self.result(200, rt, self.out(rt, version, old))
        if rt.id == _NAMESPACES:  # no namespace controller here: empty it at once
            for other in self.types:
                if other.namespaced and other.stored:
                    for member in self.store.items(other.id, key[1]):
                        self.store.commit(other.id, (key[1], member["metadata"]["name"]), None)
            gone = self.store.commit(rt.id, key, None)
            return self.result(200, rt, self.out(rt, version, gone))
        self.store.commit(rt.id, key, None)
        details = {"name": key[1], "group": rt.group, "kind": rt.plural, "uid": meta["uid"]}
        return self.result(200, rt, success_status({k: v for k, v in details.items() if v}))

    def delete_collection(self, target: Target, query: Mapping[str, str]) -> Result:
        rt = target.rt
        selector = Selector(
            query.get("labelSelector", ""), query.get("fieldSelector", ""), rt.strategy.field_labels
        )
        dry_run = dry_run_of(query)
        deleted: list[Obj] = []
        for obj in self.store.items(rt.id, target.namespace or None):
            if not selector.matches(obj):
                continue
            current: Obj | None = obj
            while current is not None and selector.matches(current):
                try:
                    result = self._delete(target, current, dry_run)
                except _Raced:  # written meanwhile: judged again as it is now
                    current = self.store.get(rt.id, _key(current))
                    continue
                deleted.append(current if result.body.get("kind") == "Status" else result.body)
                break
        rv = self.store.resource_version
        return self.result(200, rt, self.list_body(target, {"resourceVersion": str(rv)}, deleted))
