"""The report API on the command line: `addon-status report`, and the flags of `run` that set
up the report server (address, authentication, grants).

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
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from controller.flags import Flag

if TYPE_CHECKING:  # imported where used, so that `addon-status report` loads only the client
    from prometheus_client import CollectorRegistry

    from controller.kube.api import Kube
    from controller.reports.auth import Authorizer
    from controller.reports.client import ReportClient
    from controller.reports.server import ReportServer, ReportSink, ServingCertificate
    from statemachines.config import Config

__all__ = [
    "REPORT_API_FLAGS",
    "ReportApiSettings",
    "add_report_parser",
    "build_report_server",
    "run_report",
]

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
    from controller.reports.client import ReportRejected, ReportUnavailable

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
        print(f"rejected: {error}", file=sys.stderr)
        return 1
    except ReportUnavailable as error:
        print(f"no verdict: {error}", file=sys.stderr)
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
    from controller.reports.client import ReportClient

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


_API = "report API"
REPORT_API_FLAGS = (
    Flag("report_address", "--report-address", "host:port of POST /v1/reports (:8090)", "ADDR",
         group=_API),
    Flag("authorization", "--authorization",
         "YAML grants: operator: [subjects], collectors: {name: [subjects]}", "FILE", group=_API),
    Flag("operator_identity", "--operator-identity",
         "may speak as the endpoint operator (repeatable)", "SUBJECT", "list", _API),
    Flag("collector_identity", "--collector-identity",
         "may report for collector NAME (repeatable)", "NAME=SUBJECT", "list", _API),
    Flag("token_table", "--token-table",
         "static tokens (token,user per line) instead of TokenReview; demos", "FILE", group=_API),
    Flag("tls_cert_file", "--tls-cert-file",
         "PEM certificate (chain) to serve HTTPS with; reloaded when it changes", "PATH",
         group=_API),
    Flag("tls_key_file", "--tls-key-file", "PEM private key of --tls-cert-file", "PATH",
         group=_API),
    Flag("insecure", "--insecure", "no authentication at all; refuses to listen beyond loopback",
         kind="switch", group=_API),
)  # fmt: skip
"""The report server's flags (of `run`); `build_report_server` turns them into a server."""


class ReportApiSettings(Protocol):
    """What `REPORT_API_FLAGS` set (`controller.spoke.options.RunOptions` has it all)."""

    report_address: str
    authorization: Path | None
    operator_identity: tuple[str, ...]
    collector_identity: tuple[str, ...]
    token_table: Path | None
    tls_cert_file: Path | None
    tls_key_file: Path | None
    insecure: bool


def build_report_server(
    args: ReportApiSettings,
    *,
    sink: ReportSink,
    config: Config,
    registry: CollectorRegistry,
    kube: Callable[[], Kube],
) -> ReportServer:
    """The report server the flags describe; ConfigError (naming the flag) when they do not fit.

    `kube` is called only for TokenReview, so that demos need no cluster.
    """
    from controller.reports.auth import (
        Authenticator,
        InsecureAuthenticator,
        StaticTokenAuthenticator,
        TokenReviewAuthenticator,
    )
    from controller.reports.server import ReportMetrics, ReportServer
    from statemachines.errors import ConfigError

    host, sep, port = str(args.report_address).rpartition(":")
    if not sep or not port.isdigit():
        raise ConfigError(f"--report-address: {args.report_address!r} is not host:port")
    authenticator: Authenticator
    if args.insecure:
        authenticator = InsecureAuthenticator()
    elif args.token_table is not None:
        authenticator = StaticTokenAuthenticator.from_file(args.token_table)
    else:
        authenticator = TokenReviewAuthenticator(kube())
    tls = _serving_certificate(args)
    authorizer = _authorizer(args, config)
    return ReportServer(
        sink,
        authenticator=authenticator,
        authorizer=authorizer,
        config=config,
        host=host.strip("[]") or ("127.0.0.1" if args.insecure else "0.0.0.0"),
        port=int(port),
        metrics=ReportMetrics(registry),
        tls=tls,
    )


def _serving_certificate(args: ReportApiSettings) -> ServingCertificate | None:
    """HTTPS with both TLS flags, plain HTTP with neither; loaded now, so a bad file stops `run`."""
    from controller.reports.server import ServingCertificate, ServingCertificateError
    from statemachines.errors import ConfigError

    cert_file, key_file = args.tls_cert_file, args.tls_key_file
    if cert_file is None and key_file is None:
        return None
    if key_file is None:
        raise ConfigError("--tls-key-file: required with --tls-cert-file")
    if cert_file is None:
        raise ConfigError("--tls-cert-file: required with --tls-key-file")
    if args.insecure:
        raise ConfigError("--insecure: serves plain HTTP on loopback; drop it or the TLS flags")
    try:
        return ServingCertificate(Path(cert_file), Path(key_file))
    except ServingCertificateError as error:
        flag = "--tls-cert-file" if error.role == "certificate" else "--tls-key-file"
        raise ConfigError(f"{flag}: {error.problem}") from error


def _authorizer(args: ReportApiSettings, config: Config) -> Authorizer:
    from controller.reports.auth import Authorizer
    from statemachines.errors import ConfigError

    if args.authorization is not None:
        if args.operator_identity or args.collector_identity:
            raise ConfigError("--authorization: give the file or the identity flags, not both")
        return Authorizer.load(args.authorization, profile=config.profile)
    if args.operator_identity or args.collector_identity:
        return Authorizer.from_flags(
            operator=args.operator_identity,
            collectors=args.collector_identity,
            profile=config.profile,
        )
    if args.insecure:
        # Never consulted: the insecure identity is unrestricted.
        return Authorizer(operator=(), collectors={}, profile=config.profile)
    raise ConfigError("--authorization: who may report? give the grants file or identity flags")
