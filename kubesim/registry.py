"""The write side of kube-apiserver's generic registry, in its order of checks: decode (400),
preconditions and resourceVersion (409, or 422 when a custom resource omits it), the
strategy's prepare and validation (422), admission (404 for a missing namespace), storage
(409 AlreadyExists); no-op writes are answered without a new resourceVersion."""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Mapping
from typing import Any, Final

from kubesim.access import Authenticator
from kubesim.codec import clone, decode_json, format_time, now
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
    ObjectMetaError,
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
from kubesim.typed import TypedDecodeError

__all__ = ["Registry"]

Obj = dict[str, Any]
_SUFFIX_ALPHABET: Final = "bcdfghjklmnpqrstvwxz2456789"
_NAMESPACES: Final = ("", "namespaces")


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    return "array" if isinstance(value, list) else "string"


def _dry_run(query: Mapping[str, str]) -> bool:
    value = query.get("dryRun", "")
    if value not in ("", "All"):
        raise bad_request(f'dryRun: Unsupported value: "{value}": supported values: "All"')
    return value == "All"


def _field_validation(query: Mapping[str, str]) -> str:
    value = query.get("fieldValidation", "") or "Warn"
    if value not in ("Ignore", "Warn", "Strict"):
        raise bad_request(f"fieldValidation parameter unsupported: {value}")
    return value


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

    # -- decoding ---------------------------------------------------------------------------

    def _decode(
        self, rt: ResourceType, version: str, body: Any, query: Mapping[str, str]
    ) -> tuple[Obj, list[str]]:
        """The request body as the object to store, plus `Warning` texts for dropped fields."""
        field_validation = _field_validation(query)
        cannot = f'{rt.kind} in version "{version}" cannot be handled as a {rt.kind}'
        if body is None:
            raise bad_request("Object 'Kind' is missing in 'null'")
        if not isinstance(body, dict):
            raise bad_request(
                f"{cannot}: json: cannot unmarshal {_json_kind(body)} into Go "
                f"value of type map[string]interface {{}}"
            )
        expected = rt.api_version(version)
        api_version = body.get("apiVersion") or expected
        kind = body.get("kind") or rt.kind
        if api_version not in [rt.api_version(v) for v in rt.versions]:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the "
                f"expected API version ({expected})"
            )
        if kind != rt.kind and not rt.strategy.unstructured:
            raise bad_request(
                f'no kind "{kind}" is registered for version "{api_version}" in '
                f'scheme "pkg/api/legacyscheme/scheme.go:30"'
            )
        try:
            obj, dropped = rt.strategy.decode(
                {**body, "apiVersion": expected, "kind": kind}, version
            )
        except (ObjectMetaError, TypedDecodeError) as exc:
            raise bad_request(f"{cannot}: {exc}") from None
        obj["apiVersion"] = rt.api_version(rt.storage_version)
        if field_validation == "Strict" and dropped:
            raise bad_request(
                "strict decoding error: " + ", ".join(f'unknown field "{path}"' for path in dropped)
            )
        warnings = [] if field_validation == "Ignore" else [f'unknown field "{p}"' for p in dropped]
        return obj, warnings

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
        dry_run = _dry_run(query)
        obj, warnings = self._decode(rt, target.version, body, query)
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
        with self.store.lock:
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
        if self.admit is not None and target.user is not None:
            warnings = [*warnings, *self.admit("CREATE", target, obj, None)]
        if self.store.get(rt.id, (namespace, name)) is not None:
            raise already_exists(rt.group, rt.plural, name)
        stored = obj if dry_run else self.store.commit(rt.id, (namespace, name), obj)
        return self.result(201, rt, self.out(rt, version, stored), warnings)

    def _review(self, target: Target, body: Any, query: Mapping[str, str]) -> Result:
        """A review (reviews.py): answered, never stored."""
        rt = target.rt
        obj, warnings = self._decode(rt, target.version, body, query)
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
        dry_run = _dry_run(query)
        obj, warnings = self._decode(rt, target.version, body, query)
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
        with self.store.lock:
            old = self.store.get(rt.id, target.key)
            if old is None:
                if rt.strategy.allow_create_on_update and not target.subresource:
                    meta.pop("resourceVersion", None)
                    return self._create(target, obj, dry_run, warnings)
                raise not_found(rt.group, rt.plural, name)
            return self._update(target, old, obj, dry_run, warnings, uid_precondition=True)

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
        dry_run = _dry_run(query)
        with self.store.lock:
            old = self.store.get(rt.id, target.key)
            if old is None:
                raise not_found(rt.group, rt.plural, target.name)
            current = clone(self.out(rt, target.version, old))
            patched = apply_patch(kind, current, document, rt.strategy.merge_lists)
            obj, warnings = self._decode(rt, target.version, patched, query)
            if rt.namespaced:
                obj["metadata"].setdefault("namespace", target.namespace)
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
        if self.admit is not None and target.user is not None:
            warnings = [*warnings, *self.admit("UPDATE", target, new, old)]
        if new == old or dry_run:
            return self.result(200, rt, self.out(rt, version, new), warnings)
        key: ObjectKey = (old_meta.get("namespace", ""), name)
        stored = self.store.commit(rt.id, key, new)
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            self.store.commit(rt.id, key, None)  # the last finalizer is gone: delete now
        return self.result(200, rt, self.out(rt, version, stored), warnings)

    # -- delete -----------------------------------------------------------------------------

    def delete(self, target: Target, body: Any, query: Mapping[str, str]) -> Result:
        rt, name = target.rt, target.name
        options = body if isinstance(body, dict) else {}
        dry_run = _dry_run(query) or "All" in (options.get("dryRun") or [])
        preconditions = options.get("preconditions") or {}
        with self.store.lock:
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
            return self._delete(target, old, dry_run)

    def _delete(self, target: Target, old: Obj, dry_run: bool) -> Result:
        rt, version = target.rt, target.version
        meta = old["metadata"]
        if self.admit is not None and target.user is not None:
            self.admit("DELETE", target, None, old)
        key: ObjectKey = (meta.get("namespace", ""), meta["name"])
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
        dry_run = _dry_run(query)
        deleted: list[Obj] = []
        with self.store.lock:
            for obj in self.store.items(rt.id, target.namespace or None):
                if selector.matches(obj):
                    result = self._delete(target, obj, dry_run)
                    deleted.append(obj if result.body.get("kind") == "Status" else result.body)
            rv = self.store.resource_version
        return self.result(200, rt, self.list_body(target, {"resourceVersion": str(rv)}, deleted))
