"""`addon-status report`: a reason sent to the controller's report API, its verdict printed.
It loads the client only (no core, no pydantic), so that a collector's script pays little for
each report; the flags of `run` that set up the server are `controller.report_api.flags`.

`report` exit codes are for scripts: 0 for any verdict (a refused report is an answer, not a
failure), 1 when the server rejected the request (4xx; the error on stderr), 2 for usage errors
and when no verdict could be had. Tokens are read from files, never taken on the command line,
where `ps` would show them.
"""

from __future__ import annotations

import argparse
import json
import os
import ssl
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from controller.flags import Flag, add_flags

if TYPE_CHECKING:  # imported where used, so that `addon-status --help` does not load it
    from controller.reporter.client import ReportClient

__all__ = ["add_report_parser", "report_flags", "run_report"]

URL_ENV = "ADDON_STATUS_URL"
CA_FILE_ENV = "ADDON_STATUS_CA_FILE"


EXAMPLES = """examples:
  addon-status report --url http://127.0.0.1:8090 --collector metrics-collector \\
      --reason ForwardSuccessful --token-file /var/run/secrets/tokens/report
  ADDON_STATUS_URL=https://addon-status.NAMESPACE.svc:8090 addon-status report \\
      --reason UpdateSuccessful --version 2.11.0 --ca-file ca.crt --token-file token"""


def report_flags(environ: Mapping[str, str]) -> tuple[Flag, ...]:
    """The flags of `report`; `--url` and `--ca-file` default to their variables."""
    return (
        Flag("url", "--url", f"the controller's report API (env {URL_ENV})", "URL",
             default=environ.get(URL_ENV), required=URL_ENV not in environ),
        Flag("collector", "--collector", "the collector the report is about", "NAME",
             shown="none: every collector"),
        Flag("reason", "--reason", "e.g. ForwardFailure, UpdateSuccessful", "REASON",
             required=True),
        Flag("message", "--message", "free text for the condition", "TEXT",
             shown="none: a heartbeat keeps it"),
        Flag("observed_generation", "--observed-generation", "the addon CR's generation seen",
             "N", type=_generation),
        Flag("version", "--version",
             "with UpdateSuccessful: the version the update installs (at most 64 characters)",
             "VERSION"),
        Flag("token_file", "--token-file", "a file holding the bearer token (a service "
             "account's)", "PATH", type=Path),
        Flag("ca_file", "--ca-file", f"PEM CA bundle of an https server (env {CA_FILE_ENV})",
             "PATH", type=Path, default=environ.get(CA_FILE_ENV),
             shown=None if environ.get(CA_FILE_ENV) else "the system's"),
        Flag("timeout", "--timeout", "seconds per attempt", "SECONDS", type=float, default=5.0),
        Flag("deadline", "--deadline", "seconds for all retries", "SECONDS", type=float,
             default=30.0),
    )  # fmt: skip


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds `report` to the `addon-status` subcommands; its handler is `run_report`."""
    report: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="report a reason to the controller and print its verdict",
        description=__doc__,
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_flags(report, report_flags(os.environ), variables=False)
    report.set_defaults(handler=run_report)
    return report


def run_report(args: argparse.Namespace) -> int:
    from controller.reporter.client import ReportRejected, ReportUnavailable
    from controller.terminal import escaped

    client = _client(args)
    if client is None:
        return 2
    try:
        verdict = client.report(
            args.collector,
            reason=args.reason,
            message=args.message,
            observed_generation=args.observed_generation,
            version=args.version,
        )
    except ReportRejected as error:
        print(f"rejected: {escaped(error)}", file=sys.stderr)
        return 1
    except ReportUnavailable as error:
        print(f"no verdict: {escaped(error)}", file=sys.stderr)
        return 2
    except ValueError as error:  # e.g. a token no header can carry; the message never quotes it
        print(f"--token-file: {error}", file=sys.stderr)
        return 2
    finally:
        client.close()
    print(json.dumps(verdict, indent=2))
    return 0


def _client(args: argparse.Namespace) -> ReportClient | None:
    """The client the flags describe; None, with the flag's problem on stderr, when they do not."""
    from controller.reporter.client import ReportClient

    token = None
    if args.token_file is not None:
        try:
            token = args.token_file.read_text(encoding="utf-8").strip()
        except OSError as error:
            print(f"{args.token_file}: cannot read the token: {error.strerror}", file=sys.stderr)
            return None
    ca_file = None if args.ca_file is None else str(args.ca_file)
    try:
        return ReportClient(
            args.url, token=token, timeout=args.timeout, deadline=args.deadline, ca_file=ca_file
        )
    except ValueError as error:
        print(f"--url: {error}", file=sys.stderr)
    except OSError as error:  # the CA file: missing, unreadable, or no PEM certificate in it
        print(f"--ca-file: {args.ca_file}: {_reason(error)}", file=sys.stderr)
    return None


def _reason(error: OSError) -> str:
    if isinstance(error, ssl.SSLError):
        return f"no PEM certificate in it ({error.reason or error.library})"
    return error.strerror or str(error)


def _generation(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value
