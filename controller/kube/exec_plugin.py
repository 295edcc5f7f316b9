"""A kubeconfig user's `exec` credential plugin, run as client-go runs one (the ExecCredential
contract, client.authentication.k8s.io v1 and v1beta1): its command resolved as the
kubeconfig's paths, `args` and `env`, `KUBERNETES_EXEC_INFO` (with `spec.cluster` when it asks),
no terminal; it prints a token or a client certificate and key, and when they expire. It runs
within the call that needs it (what is left of the call's `--request-timeout`), in a process
group of its own, killed when it ends or times out: no child of it outlives it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from controller.kube.api import ConnectionSetupError

__all__ = ["ExecPlugin", "plugin_of", "run_plugin"]

_EXEC_VERSIONS: Final = ("client.authentication.k8s.io/v1", "client.authentication.k8s.io/v1beta1")


@dataclass(frozen=True)
class ExecPlugin:
    """A kubeconfig user's `exec`: a command that prints an ExecCredential."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    api_version: str = "client.authentication.k8s.io/v1"
    provide_cluster_info: bool = False  # KUBERNETES_EXEC_INFO then carries spec.cluster
    interactive_mode: str = "IfAvailable"  # Never, IfAvailable or Always (needs a terminal)


def run_plugin(
    plugin: ExecPlugin, cluster: dict[str, Any], timeout: float
) -> tuple[str | None, tuple[bytes, bytes] | None, datetime | None]:
    """Run the plugin as client-go does (KUBERNETES_EXEC_INFO, no terminal, the cluster when
    it asks for it) for at most `timeout` seconds; its token or client certificate and key,
    and when they expire."""
    if plugin.interactive_mode == "Always":
        raise ConnectionSetupError(
            f"exec plugin {plugin.command} needs a terminal (interactiveMode: Always), which "
            "addon-status never has"
        )
    spec: dict[str, Any] = {"interactive": False}
    if plugin.provide_cluster_info:
        spec["cluster"] = cluster
    info = {"apiVersion": plugin.api_version, "kind": "ExecCredential", "spec": spec}
    env = {**os.environ, **dict(plugin.env), "KUBERNETES_EXEC_INFO": json.dumps(info)}
    done = _run(plugin, env, timeout)
    sys.stderr.write(done.stderr.decode("utf-8", "replace"))  # passed on, as client-go does
    if done.returncode != 0:
        raise ConnectionSetupError(
            f"exec plugin {plugin.command} exited with {done.returncode}{_said(done.stderr)}"
        )
    try:
        credential = json.loads(done.stdout)
        status = credential["status"]
    except (ValueError, KeyError, TypeError):
        raise ConnectionSetupError(
            f"exec plugin {plugin.command} printed no ExecCredential"
        ) from None
    if credential.get("apiVersion") not in _EXEC_VERSIONS:
        raise ConnectionSetupError(f"exec plugin {plugin.command}: unknown apiVersion")
    if not isinstance(status, dict):
        raise ConnectionSetupError(f"exec plugin {plugin.command} printed no status")
    expires = _expiry(plugin, status.get("expirationTimestamp"))
    if status.get("token"):
        return str(status["token"]), None, expires
    cert, key = status.get("clientCertificateData"), status.get("clientKeyData")
    if isinstance(cert, str) and isinstance(key, str) and cert and key:
        return None, (cert.encode(), key.encode()), expires
    raise ConnectionSetupError(
        f"exec plugin {plugin.command} printed an ExecCredential with neither a token nor a "
        "client certificate and key"
    )


def _run(
    plugin: ExecPlugin, env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[bytes]:
    try:
        process = subprocess.Popen(
            [plugin.command, *plugin.args], env=env, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
    except OSError as error:
        raise ConnectionSetupError(
            f"exec plugin {plugin.command}: {type(error).__name__}"
        ) from None
    try:
        out, err = process.communicate(timeout=max(timeout, 0.0))
    except subprocess.TimeoutExpired:
        finished = process.poll() is not None  # only a child of it holds its output open
        _kill_group(process.pid)
        out, err = process.communicate()
        if not finished:
            raise ConnectionSetupError(
                f"exec plugin {plugin.command} did not finish within the call's "
                f"{max(timeout, 0.0):.3g}s (--request-timeout)"
            ) from None
    finally:  # its children do not outlive it (a group's id is not handed out while it lives)
        _kill_group(process.pid)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def _kill_group(group: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # none of it is left
        os.killpg(group, signal.SIGKILL)


# What in a plugin's stderr may be a credential: a long run of a token's characters (a JWT,
# an access key) or the word after `bearer`/`token`/`password`.
_CREDENTIAL_LIKE: Final = re.compile(
    r"[A-Za-z0-9_.~+/=-]{16,}|(?i:(?<=bearer)|(?<=token)|(?<=password))[\s:=\"']+[^\s\"']+"
)


def _said(stderr: bytes) -> str:
    """The last line a failing plugin wrote to stderr, for the error: what went wrong ("run
    `cloud login`") without what may be a credential, within 200 characters."""
    lines = [line for line in stderr.decode("utf-8", "replace").splitlines() if line.strip()]
    if not lines:
        return ""
    text = "".join(c if c.isprintable() else " " for c in lines[-1].strip())
    return ": " + _CREDENTIAL_LIKE.sub(" [REDACTED]", text)[:200]


def _expiry(plugin: ExecPlugin, stamp: object) -> datetime | None:
    """An ExecCredential's `expirationTimestamp`: RFC 3339 with its zone, as client-go decodes
    it (a zone-less time is refused there too)."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        when = None
    if when is None or when.tzinfo is None:
        raise ConnectionSetupError(
            f"exec plugin {plugin.command}: expirationTimestamp is not an RFC 3339 time"
        )
    return when


def plugin_of(raw: Mapping[str, Any]) -> ExecPlugin:
    """A kubeconfig user's `exec` section (its command resolved as the kubeconfig's paths)."""
    env = tuple((str(e["name"]), str(e["value"])) for e in raw.get("env") or [] if "name" in e)
    return ExecPlugin(
        command=str(raw["command"]),
        args=tuple(str(a) for a in raw.get("args") or []),
        env=env,
        api_version=str(raw.get("apiVersion") or _EXEC_VERSIONS[0]),
        provide_cluster_info=raw.get("provideClusterInfo") is True,
        interactive_mode=str(raw.get("interactiveMode") or "IfAvailable"),
    )
