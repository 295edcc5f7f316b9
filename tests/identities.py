"""A process's tests run as the process's own ServiceAccount, bound only by the shipped
manifests' roles (issue 34): the overlay's RBAC objects are applied to a kubesim that authorizes
as kube-apiserver's RBAC does, with an admin token for the tests' own setup writes, so a request
the manifests do not allow is a 403 in a test. Extra rights a test needs are granted in that
test, visibly (`grant`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.kube.api import Kube
from kubesim import APIServer, UserInfo
from tests.manifests.kustomize import MANIFESTS, build, find
from tests.support import apply_objects, kube_of

Obj = dict[str, Any]

ADMIN_TOKEN: Final = "admin"
ADMIN: Final = UserInfo("kubernetes-admin", groups=("system:masters",))
RBAC_KINDS: Final = frozenset(
    {"ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"}
)

HUB_CONTROLLER: Final = MANIFESTS / "hub-controller"
HUB_CONTROLLER_ACM: Final = MANIFESTS / "hub-controller-acm"


@dataclass(frozen=True)
class Identity:
    """A ServiceAccount a shipped overlay runs a process as, and the overlay's RBAC objects."""

    namespace: str
    name: str
    rbac: tuple[Obj, ...]

    @property
    def user(self) -> UserInfo:
        """What kube-apiserver's ServiceAccount token authenticator says of its token."""
        groups = ("system:serviceaccounts", f"system:serviceaccounts:{self.namespace}")
        return UserInfo(f"system:serviceaccount:{self.namespace}:{self.name}", groups=groups)


def identity(overlay: Path, deployment: str) -> Identity:
    """The ServiceAccount of `overlay`'s Deployment `deployment`, with the overlay's RBAC."""
    objects = build(overlay).objects
    found = find(objects, "Deployment", deployment)
    account = found["spec"]["template"]["spec"]["serviceAccountName"]
    rbac = tuple(o for o in objects if o.get("kind") in RBAC_KINDS)
    return Identity(found["metadata"]["namespace"], account, rbac)


def tokens_for(**identities: Identity) -> dict[str, UserInfo]:
    """kubesim's tokens: `admin` for setup, and each identity under its keyword."""
    return {ADMIN_TOKEN: ADMIN, **{token: i.user for token, i in identities.items()}}


def bind(server: APIServer, *identities: Identity) -> None:
    """Apply each identity's namespace and the overlay's RBAC objects, as the admin."""
    admin = kube_of(server, ADMIN_TOKEN)
    namespaces = {i.namespace for i in identities}
    apply_objects(admin, [_namespace(n) for n in sorted(namespaces)])
    apply_objects(admin, [o for i in identities for o in i.rbac])


def grant(server: APIServer, who: Identity, rules: Iterable[Mapping[str, Any]], why: str) -> None:
    """Rights beyond the shipped roles that one test needs (a ClusterRole named after `why`)."""
    name = "test-extra-" + "-".join(why.lower().split())[:40]
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": [dict(r) for r in rules],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": who.name, "namespace": who.namespace}],
    }
    admin: Kube = kube_of(server, ADMIN_TOKEN)
    apply_objects(admin, [role, binding])


def _namespace(name: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
