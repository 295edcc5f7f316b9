"""`Impersonate-*` headers as kube-apiserver's impersonation filter reads them
(apiserver/pkg/endpoints/filters/impersonation), after authentication and before
authorization: each thing asked for (the user or service account, each group, each extra
value, the UID) must be allowed by the `impersonate` verb on `users`, `serviceaccounts`,
`groups`, `userextras/<key>` or `uids`, else the request is the authorizer's 403 for that
check; groups, an extra or a UID without a user is a 400. The request then runs as the
impersonated user, `system:authenticated` added unless a group says otherwise (extras are
checked but not carried: kubesim's users have none)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from typing import Final
from urllib.parse import unquote

from kubesim.access import UserInfo
from kubesim.errors import APIError, bad_request
from kubesim.routing import RequestInfo

__all__ = ["impersonate"]

_USER: Final = "Impersonate-User"
_GROUP: Final = "Impersonate-Group"
_UID: Final = "Impersonate-Uid"
_EXTRA: Final = "impersonate-extra-"
_AUTHENTICATION: Final = "authentication.k8s.io"
_SERVICE_ACCOUNT: Final = "system:serviceaccount:"

Authorize = Callable[[UserInfo, RequestInfo], APIError | None]


@dataclass(frozen=True, slots=True)
class _Asked:
    """One v1.ObjectReference of the filter: what is impersonated."""

    kind: str  # User, ServiceAccount, Group, UserExtra, UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""

    def go(self) -> str:
        """`%v` of the ObjectReference (Kind Namespace Name UID APIVersion RV FieldPath)."""
        fields = (self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)
        return "{" + " ".join(fields) + "}"

    def check(self) -> RequestInfo:
        """The `impersonate` request the authorizer must allow."""
        group, resource, subresource = {
            "User": ("", "users", ""),
            "ServiceAccount": ("", "serviceaccounts", ""),
            "Group": ("", "groups", ""),
            "UserExtra": (_AUTHENTICATION, "userextras", self.field_path),
            "UID": (_AUTHENTICATION, "uids", ""),
        }[self.kind]
        return RequestInfo("", "", "impersonate", True, api_group=group, resource=resource,
                           subresource=subresource, namespace=self.namespace,
                           name=self.name)  # fmt: skip


def _asked(headers: Message) -> list[_Asked]:
    asked: list[_Asked] = []
    user = headers.get(_USER) or ""
    if user:
        namespace, _, name = user.removeprefix(_SERVICE_ACCOUNT).partition(":")
        is_account = user.startswith(_SERVICE_ACCOUNT) and namespace and name and ":" not in name
        asked.append(
            _Asked("ServiceAccount", name, namespace) if is_account else _Asked("User", user)
        )
    asked += [_Asked("Group", group) for group in headers.get_all(_GROUP) or []]
    for header, value in headers.items():
        if header.lower().startswith(_EXTRA):
            key = unquote(header[len(_EXTRA) :].lower())
            asked.append(_Asked("UserExtra", value, api_version=f"{_AUTHENTICATION}/v1",
                                field_path=key))  # fmt: skip
    uid = headers.get(_UID) or ""
    if uid:
        asked.append(_Asked("UID", uid, api_version=f"{_AUTHENTICATION}/v1"))
    if asked and not user:
        listed = " ".join(a.go() for a in asked)
        raise bad_request(f"requested [{listed}] without impersonating a user")
    return asked


def impersonate(headers: Message, requestor: UserInfo, authorize: Authorize | None) -> UserInfo:
    """The user the request runs as; raises the APIError kube-apiserver answers instead."""
    asked = _asked(headers)
    if not asked:
        return requestor
    username, uid, groups = "", "", []
    groups_given = any(a.kind == "Group" for a in asked)
    for item in asked:
        denied = authorize(requestor, item.check()) if authorize is not None else None
        if denied is not None:
            raise denied
        if item.kind == "User":
            username = item.name
        elif item.kind == "ServiceAccount":
            username = f"{_SERVICE_ACCOUNT}{item.namespace}:{item.name}"
            if not groups_given:
                groups = ["system:serviceaccounts", f"system:serviceaccounts:{item.namespace}"]
        elif item.kind == "Group":
            groups.append(item.name)
        elif item.kind == "UID":
            uid = item.name
    if username != "system:anonymous":
        if not {"system:authenticated", "system:unauthenticated"} & set(groups):
            groups.append("system:authenticated")
    elif "system:unauthenticated" not in groups:
        groups.append("system:unauthenticated")
    return UserInfo(username, uid=uid, groups=tuple(groups))
