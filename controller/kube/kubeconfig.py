"""API clients (`Connection`s) from a kubeconfig, or from the pod's service account; the hub's
from a kubeconfig file that may change under us.

The hub kubeconfig comes from a mounted Secret; the kubelet updates it by swapping a symlink,
so the file's identity, mtime and content change while the process runs (a rotated token, a
new CA). Where the addon framework registers the agent, the Secret holds the kubeconfig and the
client certificate and key it names (`tls.crt`, `tls.key`): a rotation changes those files and
leaves the kubeconfig as it was. `KubeconfigSource` builds a fresh `Connection` from the file,
notices when the file or a file it names changed and rebuilds (one log line), and keeps the last
good one whenever a rebuild fails: a broken rotation must not cut a working connection.

What a kubeconfig may say, read as kubectl reads it: the current context's cluster (`server`,
`certificate-authority[-data]`, `insecure-skip-tls-verify`, `tls-server-name`, `proxy-url`) and
user (`token`, `tokenFile`, `client-certificate[-data]`, `client-key[-data]`, `exec`, `as`,
`as-uid`, `as-groups`, `as-user-extra`); relative paths resolve against their file's
directory, and `KUBECONFIG`'s files are merged, as kubectl does. `controller.kube.contexts`
reads the chosen context and names what it refuses: basic auth (removed from kube-apiserver in
1.19), an `auth-provider` (client-go keeps only `oidc`, not supported here).

Error messages name the path and the kind of problem but never quote the file: a kubeconfig
holds tokens and keys.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from controller.kube.connection import Connection, ConnectionSetupError
from controller.kube.contexts import KubeconfigError, connection_for, entry_named
from statemachines.errors import AddonStatusError
from statemachines.yamlfile import YAMLFileError, load_yaml

__all__ = [
    "Kubeconfig",
    "KubeconfigError",
    "KubeconfigSource",
    "client_for",
    "client_for_url",
    "kubeconfig_files",
    "kubeconfig_path",
]

log = logging.getLogger(__name__)


Stat = tuple[int, int, int] | None  # (inode, mtime, size); None: not there


@dataclass(frozen=True)
class _Snapshot:
    """What identifies one version of the kubeconfig and the files it names: their stat triples
    are cheap to compare on every call, the digest of their bytes tells a touched-but-equal
    file from a really new one."""

    files: tuple[Path, ...]  # the kubeconfig first
    stats: tuple[Stat, ...]
    digest: str


def _read(path: Path) -> tuple[bytes, os.stat_result]:
    try:
        with path.open("rb") as handle:
            return handle.read(), os.fstat(handle.fileno())
    except FileNotFoundError as error:
        raise KubeconfigError(path, "kubeconfig file does not exist") from error
    except IsADirectoryError as error:
        raise KubeconfigError(path, "kubeconfig path is a directory") from error
    except OSError as error:
        raise KubeconfigError(path, f"cannot read kubeconfig: {error.strerror}") from error


# The keys of a kubeconfig's cluster and user that name files (client-go's resolved paths).
_FILE_KEYS = {
    "cluster": ("certificate-authority",),
    "user": ("client-certificate", "client-key", "tokenFile"),
}


def _named_files(document: dict[str, Any], chosen: str | None = None) -> tuple[Path, ...]:
    """The files the context's cluster and user name (the current context unless `chosen`),
    made absolute by `_resolved`."""
    name = chosen or document.get("current-context")
    context = entry_named(document, "contexts", name).get("context") or {}
    found = []
    for kind, keys in _FILE_KEYS.items():
        entry = entry_named(document, f"{kind}s", context.get(kind)).get(kind) or {}
        found += [Path(str(entry[key])) for key in keys if entry.get(key)]
    return tuple(found)


def _parse(path: Path, data: bytes) -> dict[str, Any]:
    try:
        document = load_yaml(data)
    except YAMLFileError as error:
        # Only where: the YAML error may quote the offending line, which may hold a token.
        where = str(error).split(":")[0]
        raise KubeconfigError(path, f"kubeconfig is not valid YAML at {where}") from None
    if not isinstance(document, dict):
        raise KubeconfigError(path, "kubeconfig is empty or not a mapping")
    return document


def _resolved(document: dict[str, Any], base: Path) -> dict[str, Any]:
    """`document` with the files its clusters and users name made absolute against `base`
    (its file's directory), an `exec` command too when it holds a path separator: client-go's
    ResolveLocalPaths, done per file before files are merged."""
    for kind, keys in _FILE_KEYS.items():
        for entry in document.get(f"{kind}s") or []:
            inner = entry.get(kind) if isinstance(entry, dict) else None
            if not isinstance(inner, dict):
                continue
            for key in keys:
                if inner.get(key):
                    inner[key] = str(base / str(inner[key]))
            plugin = inner.get("exec")
            if isinstance(plugin, dict) and os.sep in str(plugin.get("command") or ""):
                inner["exec"] = {**plugin, "command": str(base / str(plugin["command"]))}
    return document


def _merged(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """Kubeconfigs merged as kubectl merges the files of `KUBECONFIG`: the first file to set
    `current-context` wins, and of clusters, users and contexts of one name the first file's."""
    current = next((d["current-context"] for d in documents if d.get("current-context")), None)
    merged: dict[str, Any] = {"current-context": current, "clusters": [], "users": [],
                              "contexts": []}  # fmt: skip
    for document in documents:
        for kind in ("clusters", "users", "contexts"):
            seen = {e.get("name") for e in merged[kind]}
            merged[kind] += [
                e
                for e in document.get(kind) or []
                if isinstance(e, dict) and e.get("name") not in seen
            ]
    return merged


def kubeconfig_yaml(*, server: str, token: str, name: str = "hub", user: str = "hub") -> str:
    """A minimal kubeconfig with one cluster, one token user and one context, both named
    `name`: what the demo hands the controller for its embedded hub, and what tests mount."""
    return yaml.safe_dump({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": name, "user": user}}],
        "current-context": name,
    })  # fmt: skip


Kubeconfig = str | os.PathLike[str] | Sequence[Path]  # one file, or `KUBECONFIG`'s files


def kubeconfig_path(flag: str | None) -> Kubeconfig:
    """What a command run by a person reads, as kubectl: `--kubeconfig`, else `KUBECONFIG`'s
    files (merged), else `~/.kube/config`."""
    if flag:
        return Path(flag)
    return kubeconfig_files(os.environ.get("KUBECONFIG", "")) or Path.home() / ".kube" / "config"


def kubeconfig_files(value: str) -> tuple[Path, ...]:
    """The files a `KUBECONFIG` value lists (separated by `os.pathsep`), empty entries and
    repeats dropped, in order, as kubectl reads it."""
    return tuple(Path(p) for p in dict.fromkeys(value.split(os.pathsep)) if p)


class KubeconfigSource:
    """The current hub client; rebuilt when the file changes, old client kept on failure.

    Thread-safe. Construction fails with `KubeconfigError` when the file is missing or broken,
    so that a misconfigured deployment stops at start with a clear message; afterwards
    `current()` always returns a working client (the newest one that could be built).
    """

    def __init__(self, path: Kubeconfig, context: str | None = None) -> None:
        self.paths = (Path(path),) if isinstance(path, str | os.PathLike) else tuple(path)
        if not self.paths:
            raise ValueError("a KubeconfigSource needs a file")
        self.path = (
            self.paths[0] if len(self.paths) == 1 else Path(os.pathsep.join(map(str, self.paths)))
        )
        self.context = context  # kubectl's --context; None: the file's current-context
        self._lock = threading.Lock()
        document, snapshot = self._read_all()
        self._client: Connection = connection_for(self.path, document, context)
        self._snapshot = snapshot
        self._failed: tuple[Stat, ...] | None = None

    def current(self) -> Connection:
        """The client for the files as they are now: a `stat` of each per call, a rebuild only
        when one's identity or content changed. A change that fails to load is logged once."""
        with self._lock:
            stats = _stats(self._snapshot.files)
            if all(stat is None for stat in stats[: len(self.paths)]):
                return self._client  # mid-swap or gone: keep what works, report on reload
            if stats in (self._snapshot.stats, self._failed):
                return self._client
            self._rebuild_locked(reason="file changed")
            return self._client

    def close(self) -> None:
        """Close the current client's connection pool (at shutdown)."""
        with self._lock:
            self._client.close()

    def reload(self) -> bool:
        """Rebuild from the file even if it looks unchanged (the server refused our
        credentials, which may have been rotated in place); False keeps the old client."""
        with self._lock:
            return self._rebuild_locked(reason="reload requested")

    def _read_all(self) -> tuple[dict[str, Any], _Snapshot]:
        """The kubeconfig (its files merged, as kubectl merges `KUBECONFIG`'s: one that does
        not exist is skipped unless it is the only one), and the snapshot of its files and of
        the files it names."""
        digest = hashlib.sha256()
        documents = []
        for path in self.paths:
            if len(self.paths) > 1 and not path.exists():
                continue
            data, _ = _read(path)
            documents.append(_resolved(_parse(path, data), path.parent.resolve()))
            digest.update(data)
        if not documents:
            raise KubeconfigError(self.path, "none of the kubeconfig files exists")
        document = _merged(documents) if len(documents) > 1 else documents[0]
        files = (*self.paths, *_named_files(document, self.context))
        for named in files[len(self.paths) :]:
            digest.update(_bytes_or_nothing(named))
        return document, _Snapshot(files, _stats(files), digest.hexdigest())

    def _rebuild_locked(self, *, reason: str) -> bool:
        try:
            document, snapshot = self._read_all()
            if snapshot.digest == self._snapshot.digest and reason == "file changed":
                self._snapshot = snapshot  # touched, not changed: keep the client
                return True
            client = connection_for(self.path, document, self.context)
        except KubeconfigError as error:
            failed = _stats(self._snapshot.files)
            if failed != self._failed:
                log.warning(
                    "hub kubeconfig not reloaded (%s), keeping the old client: %s", reason, error
                )
            self._failed = failed
            return False
        old, self._client = self._client, client
        self._snapshot, self._failed = snapshot, None
        log.info("hub kubeconfig %s reloaded (%s)", self.path, reason)
        _close_quietly(old)
        return True


def _stats(files: tuple[Path, ...]) -> tuple[Stat, ...]:
    found: list[Stat] = []
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            found.append(None)
        else:
            found.append((stat.st_ino, stat.st_mtime_ns, stat.st_size))
    return tuple(found)


def _bytes_or_nothing(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # the loader names what is missing


def _close_quietly(client: Connection) -> None:
    """Release the old client's connection pool. Only the replication thread uses the hub
    client, and it asks for `current()` before each attempt, so nobody holds the old one."""
    try:
        client.close()
    except Exception:  # closing an old pool must never break a reload
        log.debug("closing the previous hub client failed", exc_info=True)


SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")


def client_for(
    kubeconfig: Kubeconfig | None, *, environ: Mapping[str, str] | None = None
) -> Connection:
    """A connection from the kubeconfig, else from the pod's service account (None): the
    API server's Service in the environment, the mounted token (read again when the kubelet
    rotates it) and CA, as client-go's in-cluster configuration.

    Raises AddonStatusError with a message that names the file but never quotes it.
    """
    if kubeconfig is not None:
        return KubeconfigSource(kubeconfig).current()
    environ = os.environ if environ is None else environ
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if not host or not port:
        raise AddonStatusError(
            "in-cluster configuration: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT "
            "are not set (not in a pod?)"
        )
    token = SERVICE_ACCOUNT / "token"
    if not token.is_file():
        raise AddonStatusError(f"in-cluster configuration: no service account token at {token}")
    server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
    try:
        return Connection(server, token_file=token, ca_file=SERVICE_ACCOUNT / "ca.crt")
    except ConnectionSetupError as error:
        raise AddonStatusError(f"in-cluster configuration: {error}") from None


def client_for_url(url: str) -> Connection:
    """A connection to a server that needs no credentials (the demo's embedded ones)."""
    return Connection(url)
