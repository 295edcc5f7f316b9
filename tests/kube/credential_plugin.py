"""A credential plugin as kubectl runs one, for the tests of the seam's `exec` support."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from controller.kube.connection import ExecPlugin


def exec_plugin(
    directory: Path,
    *,
    token: str,
    expires: str | None = None,
    runs: Path | None = None,
    exit_code: int = 0,
    certificate: bool = False,
) -> ExecPlugin:
    """A credential plugin as `kubectl` runs one: it appends the KUBERNETES_EXEC_INFO it was
    given to `runs` and prints an ExecCredential (or the token to stderr, and fails)."""
    script = directory / "credential-plugin"
    status: dict[str, str] = {"token": token}
    if certificate:  # what a plugin for a client certificate prints instead of a token
        status = {"clientCertificateData": "-----BEGIN CERTIFICATE-----...",
                  "clientKeyData": "-----BEGIN PRIVATE KEY-----..."}  # fmt: skip
    status |= {"expirationTimestamp": expires} if expires else {}
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": status}  # fmt: skip
    script.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"if {str(runs)!r} != 'None':\n"
        f"    open({str(runs)!r}, 'a').write(os.environ['KUBERNETES_EXEC_INFO'] + '\\n')\n"
        f"if {exit_code}:\n"
        f"    sys.stderr.write({token!r})\n"
        f"    sys.exit({exit_code})\n"
        f"print({json.dumps(credential)!r})\n"
    )
    script.chmod(0o700)
    return ExecPlugin(command=str(script))
