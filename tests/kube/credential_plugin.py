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
    certificate: tuple[bytes, bytes] | None = None,
    complaint: str = "",
    stall: Path | None = None,
) -> ExecPlugin:
    """A credential plugin as `kubectl` runs one: it appends the KUBERNETES_EXEC_INFO it was
    given (with its arguments as `argv` and $REGION as `region`) to `runs` and prints an
    ExecCredential of that info's apiVersion (or, with `exit_code`, writes `complaint` and
    the token to stderr and fails; or, with `stall`, starts a child that writes its process id
    there, and neither of them ever ends)."""
    script = directory / "credential-plugin"
    status: dict[str, str] = {"token": token}
    if certificate:  # what a plugin for a client certificate prints instead of a token
        status = {"clientCertificateData": certificate[0].decode(),
                  "clientKeyData": certificate[1].decode()}  # fmt: skip
    status |= {"expirationTimestamp": expires} if expires else {}
    credential = {"apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
                  "status": status}  # fmt: skip
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        f"if {str(runs)!r} != 'None':\n"
        "    seen = {**info, 'argv': sys.argv[1:], 'region': os.environ.get('REGION')}\n"
        f"    open({str(runs)!r}, 'a').write(json.dumps(seen) + '\\n')\n"
        f"if {str(stall)!r} != 'None':\n"
        "    import time\n"
        "    if os.fork() == 0:\n"
        f"        open({str(stall)!r}, 'w').write(str(os.getpid()))\n"
        "    time.sleep(3600)\n"
        f"if {exit_code}:\n"
        f"    sys.stderr.write({complaint!r} + ' token: ' + {token!r} + '\\n')\n"
        f"    sys.exit({exit_code})\n"
        f"credential = json.loads({json.dumps(credential)!r})\n"
        "print(json.dumps({**credential, 'apiVersion': info['apiVersion']}))\n"
    )
    script.chmod(0o700)
    return ExecPlugin(command=str(script))
