"""The three patch formats kube-apiserver applies to the current object: JSON merge patch
(RFC 7386), JSON patch (RFC 6902) and, for built-in types only, strategic merge patch (with the
merge keys of the fields these types have). Failures carry kube-apiserver's status codes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kubesim.codec import clone
from kubesim.errors import APIError, bad_request

__all__ = [
    "APPLY_PATCH",
    "JSON_PATCH",
    "MERGE_PATCH",
    "STRATEGIC_MERGE_PATCH",
    "apply_patch",
    "json_patch",
    "merge_patch",
    "strategic_merge_patch",
]

JSON_PATCH: Final = "application/json-patch+json"
MERGE_PATCH: Final = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH: Final = "application/strategic-merge-patch+json"
APPLY_PATCH: Final = "application/apply-patch+yaml"

MergeLists = Mapping[tuple[str, ...], str | None]


def apply_patch(kind: str, current: dict[str, Any], patch: Any, merge_lists: MergeLists) -> Any:
    if kind == MERGE_PATCH:
        if not isinstance(patch, dict):
            raise bad_request(
                "json: cannot unmarshal array into Go value of type map[string]interface {}"
            )
        return merge_patch(current, patch)
    if kind == JSON_PATCH:
        return json_patch(current, patch)
    if not isinstance(patch, dict):
        raise bad_request(
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    return strategic_merge_patch(current, patch, merge_lists)


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# -- JSON patch -----------------------------------------------------------------------------------


class _PatchError(Exception):
    pass


def _unprocessable(message: str) -> APIError:
    """How kube-apiserver reports a JSON patch that decodes but does not apply."""
    return APIError(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        {"causes": [{"message": message}]},
    )


def _pointer(path: Any) -> list[str]:
    if not isinstance(path, str):
        raise _PatchError("path must be a string")
    if path == "":
        return []
    if not path.startswith("/"):
        raise _PatchError(f'JSON pointer must be empty or start with a "/": {path}')
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise _PatchError(f"Unable to access invalid index: {token}: invalid index referenced")
    index = int(token)
    if index > len(container) or (index == len(container) and not allow_end):
        raise _PatchError(f"Unable to access invalid index: {index}: invalid index referenced")
    return index


def _parent(doc: Any, parts: list[str], path: str) -> Any:
    node = doc
    for token in parts[:-1]:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise _PatchError(f'doc is missing path: "{path}": missing value')
    return node


def _get(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        return doc
    parent = _parent(doc, parts, path)
    token = parts[-1]
    if isinstance(parent, dict) and token in parent:
        return parent[token]
    if isinstance(parent, list):
        return parent[_index(parent, token, allow_end=False)]
    raise _PatchError(f'doc is missing path: "{path}": missing value')


def _add(doc: Any, parts: list[str], value: Any, path: str) -> Any:
    if not parts:
        return clone(value)
    parent = _parent(doc, parts, path)
    token = parts[-1]
    if isinstance(parent, dict):
        parent[token] = clone(value)
    elif isinstance(parent, list):
        parent.insert(_index(parent, token, allow_end=True), clone(value))
    else:
        raise _PatchError(f"error in add for path: '{path}': doc is missing path")
    return doc


def _remove(doc: Any, parts: list[str], path: str) -> Any:
    if not parts:
        raise _PatchError("Unable to remove the whole document")
    parent = _parent(doc, parts, path)
    token = parts[-1]
    if isinstance(parent, dict):
        if token not in parent:
            raise _PatchError(f"Unable to remove nonexistent key: {token}: missing value")
        del parent[token]
    elif isinstance(parent, list):
        del parent[_index(parent, token, allow_end=False)]
    else:
        raise _PatchError(f"Unable to remove nonexistent key: {token}: missing value")
    return doc


def json_patch(document: Any, operations: Any) -> Any:
    if not isinstance(operations, list) or not all(isinstance(op, dict) for op in operations):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    doc = clone(document)
    for operation in operations:
        name = operation.get("op")
        path = operation.get("path", "")
        try:
            parts = _pointer(path)
            if name == "add":
                doc = _add(doc, parts, operation.get("value"), path)
            elif name == "remove":
                doc = _remove(doc, parts, path)
            elif name == "replace":
                try:
                    _get(doc, parts, path)
                except _PatchError:
                    raise _PatchError(
                        f"replace operation does not apply: doc is missing key: "
                        f"{path}: missing value"
                    ) from None
                doc = (
                    _add(_remove(doc, parts, path), parts, operation.get("value"), path)
                    if parts
                    else clone(operation.get("value"))
                )
            elif name in ("move", "copy"):
                source = operation.get("from", "")
                source_parts = _pointer(source)
                value = clone(_get(doc, source_parts, source))
                if name == "move":
                    doc = _remove(doc, source_parts, source)
                doc = _add(doc, parts, value, path)
            elif name == "test":
                if _get(doc, parts, path) != operation.get("value"):
                    raise _PatchError(f"testing value {path} failed: test failed")
            else:
                raise _PatchError(f"Unexpected kind: {name}")
        except _PatchError as failure:
            raise _unprocessable(str(failure)) from None
    return doc


# -- strategic merge patch ---------------------------------------------------------------------


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


def strategic_merge_patch(
    original: Any, patch: dict[str, Any], merge_lists: MergeLists, path: tuple[str, ...] = ()
) -> Any:
    """Merge patch plus the directives and the merge keys of the patched type's lists."""
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip_directives(patch)
    if directive == "delete":
        return None
    result = dict(original) if isinstance(original, dict) else {}
    for key, value in patch.items():
        if key.startswith("$deleteFromPrimitiveList/"):
            target = key.split("/", 1)[1]
            result[target] = [item for item in result.get(target) or [] if item not in value]
            continue
        if key.startswith("$"):
            continue
        if value is None:
            result.pop(key, None)
            continue
        sub = (*path, key)
        if isinstance(value, list) and sub in merge_lists:
            result[key] = _merge_list(result.get(key) or [], value, merge_lists, sub)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value, merge_lists, sub)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        else:
            result[key] = _strip_directives(clone(value))
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    return result


def _merge_list(
    original: list[Any], patch: list[Any], merge_lists: MergeLists, path: tuple[str, ...]
) -> list[Any]:
    """The items of `path`'s list merged by its merge key; an item's own lists are found in
    `merge_lists` under `(*path, "*", ...)` (a container's `env` in a pod's `containers`)."""
    merge_key = merge_lists[path]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [
            _strip_directives(item)
            for item in patch
            if not (isinstance(item, dict) and item.get("$patch") == "replace")
        ]
    out = clone(original)
    for item in patch:
        if merge_key is None or not isinstance(item, dict):
            if item not in out:
                out.append(item)
            continue
        found = next(
            (
                i
                for i, old in enumerate(out)
                if isinstance(old, dict) and old.get(merge_key) == item.get(merge_key)
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if found is not None:
                del out[found]
        elif found is None:
            out.append(_strip_directives(item))
        else:
            out[found] = strategic_merge_patch(out[found], item, merge_lists, (*path, "*"))
    return out
