"""The reviews kube-apiserver answers rather than stores (pkg/registry/authentication and
authorization): created, never stored, answered in `status`.

- TokenReview: who holds this token, from the server's token table (the report API's
  authentication asks it).
- SelfSubjectAccessReview: may the caller do this? Every authenticated user may ask
  (`system:basic-user`); it is what `kubectl auth can-i` sends.
- SubjectAccessReview: may this user, in exactly these groups, do this? Only a caller RBAC lets
  create `subjectaccessreviews` may ask; the groups are taken as given (no
  `system:authenticated` added), as the authorizer sees them.

The spec carries exactly one of `resourceAttributes` and `nonResourceAttributes`, a
SubjectAccessReview a user or a group; anything else is the 422 the validation sends. With
RBAC off every request is allowed, as `--authorization-mode=AlwaysAllow`.
"""

from __future__ import annotations

from typing import Any, Final

from kubesim.access import Authenticator, UserInfo
from kubesim.errors import bad_request, invalid
from kubesim.fields import FieldError
from kubesim.rbac import Authorizer
from kubesim.resources import ResourceType
from kubesim.routing import RequestInfo
from kubesim.typed import Field, ListOf, MapOf, Scalar, Struct
from kubesim.typed_strategy import TypedStrategy

__all__ = ["answer_review", "review_types"]

Obj = dict[str, Any]
GROUP: Final = "authorization.k8s.io"
_STRING, _BOOL = Scalar("string"), Scalar("bool")
_ATTRIBUTES: Final = (
    Field("resourceAttributes", Struct("ResourceAttributes", tuple(
        Field(name, _STRING)
        for name in ("namespace", "verb", "group", "version", "resource", "subresource", "name")
    )), pointer=True),
    Field("nonResourceAttributes", Struct("NonResourceAttributes", (
        Field("path", _STRING), Field("verb", _STRING),
    )), pointer=True),
)  # fmt: skip
_STATUS: Final = Field("status", Struct("SubjectAccessReviewStatus", (
    Field("allowed", _BOOL, omitempty=False),
    Field("denied", _BOOL),
    Field("reason", _STRING),
    Field("evaluationError", _STRING),
)))  # fmt: skip
_SELF: Final = Struct("SelfSubjectAccessReview", (
    Field("spec", Struct("SelfSubjectAccessReviewSpec", _ATTRIBUTES)), _STATUS,
))  # fmt: skip
_SUBJECT: Final = Struct("SubjectAccessReview", (
    Field("spec", Struct("SubjectAccessReviewSpec", (
        *_ATTRIBUTES,
        Field("user", _STRING),
        Field("groups", ListOf(_STRING)),
        Field("extra", MapOf(ListOf(_STRING))),
        Field("uid", _STRING),
    ))),
    _STATUS,
))  # fmt: skip


def review_types() -> list[ResourceType]:
    """The access reviews (TokenReview is among the built-in types)."""
    reviews = (("selfsubjectaccessreviews", _SELF), ("subjectaccessreviews", _SUBJECT))
    return [
        ResourceType(
            GROUP,
            ("v1",),
            plural,
            plural[:-1],
            struct.name,
            f"{struct.name}List",
            namespaced=False,
            strategy=TypedStrategy(struct),
            verbs=("create",),
            stored=False,
        )
        for plural, struct in reviews
    ]


def answer_review(
    kind: str,
    spec: Obj,
    requester: UserInfo | None,
    authenticator: Authenticator,
    authorizer: Authorizer | None,
) -> Obj:
    """The review's `status`, or the 400/422 its spec earns. `requester` None: the server."""
    if kind == "TokenReview":
        return _token_review(spec, authenticator)
    errors = _spec_errors(spec, subject=kind == "SubjectAccessReview")
    if errors:
        raise invalid(GROUP, kind, "", errors)
    requester = requester or UserInfo("system:apiserver", groups=("system:masters",))
    if kind == "SubjectAccessReview":
        user = UserInfo(str(spec.get("user") or ""), str(spec.get("uid") or ""))
        groups = [str(g) for g in spec.get("groups") or []]
    else:
        user, groups = requester, requester.authenticated_groups()
    allowed = authorizer is None or authorizer.allows(user, groups, _request(spec))
    return {"allowed": allowed}


def _token_review(spec: Obj, authenticator: Authenticator) -> Obj:
    token = spec.get("token", "")
    if not token:
        raise bad_request("token is required for TokenReview in authentication")
    user = authenticator.lookup(token)
    if user is None:
        return {"user": {}, "error": "invalid bearer token"}
    shown: Obj = {"username": user.username}
    if user.uid:
        shown["uid"] = user.uid
    shown["groups"] = user.authenticated_groups()
    if user.extra:
        shown["extra"] = {key: list(values) for key, values in user.extra}
    status: Obj = {"authenticated": True, "user": shown}
    if spec.get("audiences"):
        status["audiences"] = list(spec["audiences"])
    return status


def _spec_errors(spec: Obj, *, subject: bool) -> list[FieldError]:
    errors = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    if resource is None and non_resource is None:
        errors.append(FieldError.required(
            "spec.resourceAttributes",
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ))  # fmt: skip
    elif resource is not None and non_resource is not None:
        errors.append(FieldError.invalid(
            "spec.nonResourceAttributes", non_resource,
            "cannot be specified in combination with resourceAttributes",
        ))  # fmt: skip
    if subject and not spec.get("user") and not spec.get("groups"):
        errors.append(FieldError.invalid(
            "spec.user", spec.get("user") or "", "at least one of user or group must be specified"
        ))  # fmt: skip
    return errors


def _request(spec: Obj) -> RequestInfo:
    """The request the review asks about, as the authorizer sees a real one."""
    if (attributes := spec.get("resourceAttributes")) is not None:
        return RequestInfo(
            "", "", str(attributes.get("verb") or ""), is_resource=True,
            api_group=str(attributes.get("group") or ""),
            api_version=str(attributes.get("version") or ""),
            resource=str(attributes.get("resource") or ""),
            subresource=str(attributes.get("subresource") or ""),
            namespace=str(attributes.get("namespace") or ""),
            name=str(attributes.get("name") or ""),
        )  # fmt: skip
    attributes = spec["nonResourceAttributes"]
    path = str(attributes.get("path") or "")
    return RequestInfo("", path, str(attributes.get("verb") or ""), is_resource=False)
