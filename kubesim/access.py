"""Who is calling and what they did: x509 client certificates (over TLS) and bearer tokens from
a table that a test can rotate at runtime, and the audit log of every request in Kubernetes'
own terms (user, verb, group, resource, subresource, namespace, name, code), to compare a
controller's calls with its RBAC Role."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "ANONYMOUS",
    "POD_NAME",
    "WRITE_VERBS",
    "AuditLog",
    "AuditRecord",
    "Authenticator",
    "UserInfo",
]

WRITE_VERBS: Final = frozenset({"create", "update", "patch", "delete", "deletecollection"})


# The key kube-apiserver's ServiceAccount authenticator puts in `user.extra` for a token bound
# to a pod (every projected token a pod mounts): two replicas of one Deployment share their
# user name and groups, and differ only there (and in the audit log's record of it).
POD_NAME: Final = "authentication.kubernetes.io/pod-name"


@dataclass(frozen=True, slots=True)
class UserInfo:
    username: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()  # user.extra, as (key, values) pairs

    @property
    def pod(self) -> str:
        """The pod a bound ServiceAccount token names (`user.extra`), "" for any other user."""
        return next((values[0] for key, values in self.extra if key == POD_NAME and values), "")

    def authenticated_groups(self) -> list[str]:
        """kube-apiserver adds `system:authenticated` to every authenticated user."""
        groups = list(self.groups)
        if "system:authenticated" not in groups:
            groups.append("system:authenticated")
        return groups


ANONYMOUS: Final = UserInfo("system:anonymous", groups=("system:unauthenticated",))


class Authenticator:
    """A token file in memory. None means anonymous access is allowed for everyone; with a
    table, `anonymous` lets a request that carries no credentials in as `system:anonymous`
    (kube-apiserver's --anonymous-auth), while a wrong token is still 401."""

    def __init__(self, tokens: Mapping[str, UserInfo] | None, *, anonymous: bool = False) -> None:
        self._lock = threading.Lock()
        self._tokens = dict(tokens) if tokens is not None else None
        self._anonymous = anonymous

    def set_tokens(self, tokens: Mapping[str, UserInfo] | None) -> None:
        with self._lock:
            self._tokens = dict(tokens) if tokens is not None else None

    def lookup(self, token: str) -> UserInfo | None:
        with self._lock:
            return None if self._tokens is None else self._tokens.get(token)

    def authenticate(
        self, authorization: str | None, certificate: tuple[str, tuple[str, ...]] | None = None
    ) -> UserInfo | None:
        """The caller, or None for a request kube-apiserver would answer with 401. A verified
        client certificate (`(CN, Os)`) is asked first, as kube-apiserver's x509 authenticator
        comes before its token authenticators."""
        if certificate is not None:
            return UserInfo(certificate[0], groups=certificate[1])
        with self._lock:
            tokens = self._tokens
        if tokens is None or (self._anonymous and not authorization):
            return ANONYMOUS
        scheme, _, token = (authorization or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return tokens.get(token.strip())


@dataclass(frozen=True, slots=True)
class AuditRecord:
    user: str
    verb: str
    api_group: str
    resource: str
    subresource: str
    namespace: str
    name: str
    code: int
    path: str = ""  # the URL path, for non-resource requests (/version, discovery)
    pod: str = ""  # user.extra's pod name: which replica of a ServiceAccount called


class AuditLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[AuditRecord] = []

    def append(self, record: AuditRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> list[AuditRecord]:
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def count(
        self,
        *,
        verbs: Iterable[str] = WRITE_VERBS,
        resource: str | None = None,
        subresource: str | None = None,
        namespace: str | None = None,
        name: str | None = None,
        api_group: str | None = None,
        user: str | None = None,
        pod: str | None = None,
        successful: bool = True,
    ) -> int:
        """How many requests matched; by default the successful writes."""
        wanted = set(verbs)
        return sum(
            1
            for r in self.records()
            if r.verb in wanted
            and (resource is None or r.resource == resource)
            and (subresource is None or r.subresource == subresource)
            and (namespace is None or r.namespace == namespace)
            and (name is None or r.name == name)
            and (api_group is None or r.api_group == api_group)
            and (user is None or r.user == user)
            and (pod is None or r.pod == pod)
            and (not successful or 200 <= r.code < 300)
        )
