"""The `Connection` one context of a kubeconfig describes, read as kubectl reads it: its
cluster and user, and what is refused, naming it, because kubectl would refuse it too or
because this client would not honour it (ignoring it would act with another identity or
another trust than the file says). Messages name entries and keys, never values: a
kubeconfig holds tokens and keys."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from controller.kube.connection import Connection, ConnectionSetupError, plugin_of
from statemachines.errors import AddonStatusError

__all__ = ["KubeconfigError", "connection_for", "entry_named"]


class KubeconfigError(AddonStatusError):
    """A kubeconfig that cannot be read or used; the message names the path, never contents."""

    def __init__(self, path: Path, problem: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


def entry_named(document: dict[str, Any], kind: str, name: Any) -> dict[str, Any]:
    for entry in document.get(kind) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry
    return {}


def connection_for(path: Path, document: dict[str, Any], context: str | None) -> Connection:
    """The connection a kubeconfig document (its paths resolved, its files merged) describes,
    for its current context unless `context` (kubectl's `--context`), see the module
    docstring; `path` names where it came from. Messages name entries and keys, never
    values: a kubeconfig holds tokens and keys."""
    chosen = entry_named(document, "contexts", context or document.get("current-context"))
    if not chosen and context:
        raise KubeconfigError(path, f"kubeconfig has no context {context!r}")
    if not chosen:
        raise KubeconfigError(path, "kubeconfig cannot be used: its current-context is not defined")
    entry = chosen.get("context") or {}
    cluster = entry_named(document, "clusters", entry.get("cluster")).get("cluster") or {}
    user = entry_named(document, "users", entry.get("user")).get("user") or {}
    if not isinstance(cluster, dict) or not isinstance(user, dict):
        raise KubeconfigError(path, "kubeconfig cannot be used: malformed entry")
    if not cluster.get("server"):
        raise KubeconfigError(path, "kubeconfig's current cluster has no server")
    _check_supported(path, cluster, user)
    token_file = _file_of(user, "tokenFile")
    if token_file is not None and not os.access(token_file, os.R_OK):
        raise KubeconfigError(path, f"kubeconfig's tokenFile {token_file} cannot be read")
    exec_section = user.get("exec")

    def decoded(entry: Mapping[str, Any], key: str) -> bytes | None:
        value = entry.get(key)
        if not value:
            return None
        try:
            return base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            raise KubeconfigError(path, f"kubeconfig's {key} is not base64") from None

    try:
        return Connection(
            str(cluster["server"]),
            token=str(user["token"]) if user.get("token") else None,
            token_file=token_file,
            exec_plugin=plugin_of(exec_section) if isinstance(exec_section, dict) else None,
            ca_file=_file_of(cluster, "certificate-authority"),
            ca_data=decoded(cluster, "certificate-authority-data"),
            cert_file=_file_of(user, "client-certificate"),
            key_file=_file_of(user, "client-key"),
            cert_data=decoded(user, "client-certificate-data"),
            key_data=decoded(user, "client-key-data"),
            insecure=bool(cluster.get("insecure-skip-tls-verify")),
            server_name=str(cluster["tls-server-name"]) if cluster.get("tls-server-name") else None,
            proxy=str(cluster["proxy-url"]) if cluster.get("proxy-url") else None,
            impersonate=_impersonation(path, user),
        )
    except ConnectionSetupError as error:
        raise KubeconfigError(path, f"kubeconfig cannot be used: {error}") from None
    except (KeyError, TypeError) as error:
        raise KubeconfigError(
            path, f"kubeconfig cannot be used: malformed entry ({type(error).__name__})"
        ) from None


def _check_supported(path: Path, cluster: Mapping[str, Any], user: Mapping[str, Any]) -> None:
    """Refuse, naming it, what kubectl would refuse or what this client would not honour:
    ignoring it would act with another identity or another trust than the file says."""
    if user.get("auth-provider"):
        raise KubeconfigError(
            path, "kubeconfig's user has an auth-provider, which addon-status does not support; "
            "use an exec plugin"
        )  # fmt: skip
    if user.get("username") or user.get("password"):
        raise KubeconfigError(
            path, "kubeconfig's user has a username/password, which kube-apiserver no longer "
            "accepts (basic auth, removed in 1.19); use a token or a client certificate"
        )  # fmt: skip
    https = str(cluster.get("server")).startswith("https:")  # kubectl checks TLS only there
    ca = cluster.get("certificate-authority") or cluster.get("certificate-authority-data")
    if https and ca and cluster.get("insecure-skip-tls-verify"):
        raise KubeconfigError(
            path, "kubeconfig's cluster sets insecure-skip-tls-verify beside a certificate "
            "authority, which kubectl refuses too: keep one"
        )  # fmt: skip
    if not _printable(user.get("token")):
        raise KubeconfigError(path, "kubeconfig's token holds a line break or control character")


def _impersonation(path: Path, user: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The Impersonate-* headers a user's `as`, `as-uid`, `as-groups` and `as-user-extra` ask
    for, as client-go's impersonating round tripper sends them (a group or an extra value a
    header each; an extra's key escaped as a header name must be). A group, uid or extra
    without a user is refused, as client-go refuses it."""
    name, uid = user.get("as"), user.get("as-uid")
    groups, extra = user.get("as-groups") or [], user.get("as-user-extra") or {}
    if not isinstance(groups, list) or not isinstance(extra, dict):
        raise KubeconfigError(path, "kubeconfig's as-groups or as-user-extra is malformed")
    if not name and (uid or groups or extra):
        raise KubeconfigError(path, "kubeconfig's user sets as-uid, as-groups or as-user-extra "
                              "without as: impersonation needs a user")  # fmt: skip
    headers = [("Impersonate-User", str(name))] if name else []
    headers += [("Impersonate-Uid", str(uid))] if uid else []
    headers += [("Impersonate-Group", str(group)) for group in groups]
    for key, values in extra.items():
        escaped = quote(str(key), safe=_HEADER_NAME_CHARACTERS)
        listed = values if isinstance(values, list) else [values]
        headers += [(f"Impersonate-Extra-{escaped}", str(value)) for value in listed]
    if not all(_printable(value) for _, value in headers):
        raise KubeconfigError(path, "kubeconfig's impersonation holds a control character")
    return tuple(headers)


# The characters of an HTTP header name besides letters and digits (RFC 9110's tchar).
_HEADER_NAME_CHARACTERS: Final = "!#$&'*+-.^_`|~"


def _printable(token: object) -> bool:
    """A token an HTTP header can carry: ASCII, no line break or control character."""
    return token is None or (str(token).isascii() and str(token).isprintable())


def _file_of(entry: Mapping[str, Any], key: str) -> Path | None:
    """The file a kubeconfig entry names (absolute: `_resolved` made it so)."""
    value = entry.get(key)
    return Path(str(value)) if value else None
