"""What a check found, one line each (✔ or ✘ with what to do), and the access reviews the
checks ask: "may I?" (SelfSubjectAccessReview, as `kubectl auth can-i`) and "may this
subject?" (SubjectAccessReview, as `kubectl auth can-i --as`, without needing to impersonate)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TextIO

from controller.kube.api import ApiResource, Kube, KubeError
from controller.terminal import escaped

__all__ = ["Access", "Finding", "bad", "good", "may", "report"]

_SELF_REVIEW: Final = ApiResource(
    "authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview",
    namespaced=False,
)  # fmt: skip
_REVIEW: Final = ApiResource(
    "authorization.k8s.io", "v1", "subjectaccessreviews", "SubjectAccessReview", namespaced=False
)


@dataclass(frozen=True, slots=True)
class Finding:
    ok: bool
    what: str
    fix: str = ""  # what to do, when not ok


def good(what: str) -> Finding:
    return Finding(True, what)


def bad(what: str, fix: str) -> Finding:
    return Finding(False, what, fix)


@dataclass(frozen=True, slots=True)
class Access:
    """One request, as RBAC sees it."""

    verb: str
    resource: ApiResource
    namespace: str = ""
    name: str = ""
    subresource: str = ""

    def __str__(self) -> str:
        plural = self.resource.plural + (f"/{self.subresource}" if self.subresource else "")
        what = f"{plural}.{self.resource.group}" if self.resource.group else plural
        named = f" {self.name}" if self.name else ""
        where = f" in {self.namespace}" if self.namespace else ""
        return f"{self.verb} {what}{named}{where}"


def may(kube: Kube, access: Access, subject: Mapping[str, Any] | None = None) -> bool:
    """Whether RBAC allows `access` to the caller, or to `subject` (`user`, `groups`). Raises
    KubeError (403 when the caller may not ask about someone else; a review whose status is
    not an object with a boolean `allowed`, which client-go would not decode either)."""
    attributes = {
        "verb": access.verb, "group": access.resource.group,
        "version": access.resource.version, "resource": access.resource.plural,
        "subresource": access.subresource, "namespace": access.namespace, "name": access.name,
    }  # fmt: skip
    spec: dict[str, Any] = {"resourceAttributes": attributes, **(subject or {})}
    review = _REVIEW if subject else _SELF_REVIEW
    body = {"apiVersion": review.api_version, "kind": review.kind, "spec": spec}
    status = kube.create(review, "", body).get("status")
    status = {} if status is None else status  # absent or null: Go's zero value, denied
    allowed = status.get("allowed", False) if isinstance(status, dict) else None
    if not isinstance(allowed, bool):
        raise KubeError(f"create {review.kind}: the API server answered a malformed review")
    return allowed


def report(findings: Iterable[Finding | str], out: TextIO | None = None) -> bool:
    """Print each finding as it comes (a heading for a string), what the server said in it
    escaped; True when none failed."""
    out = out or sys.stdout
    marks = ("✔", "✘", "►") if _can_print(out, "✔✘►") else ("ok", "FAIL", "==")
    failed = False
    for finding in findings:
        if isinstance(finding, str):
            print(f"{marks[2]} {escaped(finding)}", file=out, flush=True)
            continue
        failed |= not finding.ok
        if finding.ok:
            print(f"{marks[0]} {escaped(finding.what)}", file=out, flush=True)
        else:
            print(f"{marks[1]} {escaped(finding.what)}: {escaped(finding.fix)}", file=out,
                  flush=True)  # fmt: skip
    return not failed


def _can_print(out: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(out, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True
