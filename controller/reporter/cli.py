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
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used, so that `addon-status --help` does not load it
    from controller.reporter.client import ReportClient

__all__ = ["add_report_parser", "run_report"]

URL_ENV = "ADDON_STATUS_URL"
CA_FILE_ENV = "ADDON_STATUS_CA_FILE"


def add_report_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Adds `report` to the `addon-status` subcommands; its handler is `run_report`."""
    report: argparse.ArgumentParser = subparsers.add_parser(
        "report",
        help="report a reason to the controller and print its verdict",
        description=__doc__,
    )
    report.add_argument(
        "--url",
        default=os.environ.get(URL_ENV),
        required=URL_ENV not in os.environ,
        help=f"the controller's report API, e.g. http://127.0.0.1:8090 (env {URL_ENV})",
    )
    report.add_argument(
        "--collector", help="the collector the report is about (none: every collector)"
    )
    report.add_argument("--reason", required=True, help="e.g. ForwardFailure, UpdateSuccessful")
    report.add_argument(
        "--message", default=None, help="free text for the condition (absent: a heartbeat keeps it)"
    )
    report.add_argument(
        "--observed-generation", type=_generation, help="the addon CR's generation seen"
    )
    report.add_argument(
        "--version",
        help="with UpdateSuccessful: the version the update installs (at most 64 characters)",
    )
    report.add_argument(
        "--token-file", type=Path, help="a file holding the bearer token (a service account's)"
    )
    report.add_argument(
        "--ca-file",
        type=Path,
        default=os.environ.get(CA_FILE_ENV),
        help=f"PEM CA bundle of an https server (default: the system's; env {CA_FILE_ENV})",
    )
    report.add_argument(
        "--timeout", type=float, default=5.0, help="seconds per attempt (default 5)"
    )
    report.add_argument(
        "--deadline", type=float, default=30.0, help="seconds for all retries (default 30)"
    )
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
