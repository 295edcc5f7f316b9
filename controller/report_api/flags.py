"""The flags of `run` that set up the report API's server (address, authentication, grants),
and the server they describe. Apart from `controller.reporter.cli`, so that `addon-status
report` does not load them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from controller.flags import Flag

if TYPE_CHECKING:  # imported where used: `run --help` lists the flags without the server
    from prometheus_client import CollectorRegistry

    from controller.kube.api import Kube
    from controller.report_api.auth import Authorizer
    from controller.report_api.server import ReportServer, ReportSink, ServingCertificate
    from statemachines.config import Config

__all__ = [
    "REPORT_API_FLAGS",
    "ReportApiSettings",
    "build_report_server",
    "combination_problem",
    "listen_address",
]

_API = "report API"
REPORT_API_FLAGS = (
    Flag("report_address", "--report-address", "host:port of POST /v1/reports", "ADDR",
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
    Flag("issue_serving_cert", "--issue-serving-cert",
         "serve HTTPS with a certificate the controller issues itself into Secret NAME (its CA "
         "published in ConfigMap NAME-ca), where no issuer provides one", "NAME", group=_API),
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
    issue_serving_cert: str | None
    insecure: bool
    addon_namespace: str


def combination_problem(args: ReportApiSettings) -> str | None:
    """Why the report API's flags do not fit together (one line naming the flags); None when
    they do. Checked with the other options, so that `run` exits 2 before it starts anything."""
    tls_files = args.tls_cert_file is not None or args.tls_key_file is not None
    identities = bool(args.operator_identity or args.collector_identity)
    _, sep, port = str(args.report_address).rpartition(":")
    other = "--insecure" if args.insecure else "--tls-cert-file/--tls-key-file"
    rules = (
        (args.issue_serving_cert is not None and (tls_files or args.insecure),
         f"--issue-serving-cert: give it or {other}, not both"),
        (args.tls_cert_file is not None and args.tls_key_file is None,
         "--tls-key-file: required with --tls-cert-file"),
        (args.tls_key_file is not None and args.tls_cert_file is None,
         "--tls-cert-file: required with --tls-key-file"),
        (args.insecure and tls_files,
         "--insecure: serves plain HTTP on loopback; drop it or the TLS flags"),
        (args.authorization is not None and identities,
         "--authorization: give the file or the identity flags, not both"),
        (not sep or not port.isdigit(),
         f"--report-address: {args.report_address!r} is not host:port"),
    )  # fmt: skip
    return next((problem for broken, problem in rules if broken), None)


def listen_address(args: ReportApiSettings) -> tuple[str, int]:
    """Where the report API listens, from `--report-address` (checked by `combination_problem`):
    an empty host is every interface, or loopback with `--insecure`."""
    host, _, port = str(args.report_address).rpartition(":")
    return host.strip("[]") or ("127.0.0.1" if args.insecure else "0.0.0.0"), int(port)


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
    from controller.report_api.auth import (
        Authenticator,
        InsecureAuthenticator,
        StaticTokenAuthenticator,
        TokenReviewAuthenticator,
    )
    from controller.report_api.server import ReportMetrics, ReportServer
    from statemachines.errors import ConfigError

    problem = combination_problem(args)
    if problem is not None:
        raise ConfigError(problem)
    host, port = listen_address(args)
    authenticator: Authenticator
    if args.insecure:
        authenticator = InsecureAuthenticator()
    elif args.token_table is not None:
        authenticator = StaticTokenAuthenticator.from_file(args.token_table)
    else:
        authenticator = TokenReviewAuthenticator(kube())
    tls = _serving_certificate(args, kube)
    authorizer = _authorizer(args, config)
    return ReportServer(
        sink,
        authenticator=authenticator,
        authorizer=authorizer,
        config=config,
        host=host,
        port=port,
        metrics=ReportMetrics(registry),
        tls=tls,
    )


def _serving_certificate(
    args: ReportApiSettings, kube: Callable[[], Kube]
) -> ServingCertificate | None:
    """HTTPS with both TLS flags or with a certificate issued here, plain HTTP with neither;
    loaded now, so a bad file stops `run`."""
    from controller.report_api.server import ServingCertificate, ServingCertificateError
    from statemachines.errors import ConfigError

    cert_file, key_file = args.tls_cert_file, args.tls_key_file
    if args.issue_serving_cert is not None:
        return _self_issued(args, kube())
    if cert_file is None or key_file is None:
        return None
    try:
        return ServingCertificate(Path(cert_file), Path(key_file))
    except ServingCertificateError as error:
        flag = "--tls-cert-file" if error.role == "certificate" else "--tls-key-file"
        raise ConfigError(f"{flag}: {error.problem}") from error


def _self_issued(args: ReportApiSettings, kube: Kube) -> ServingCertificate:
    from controller.kube.api import KubeError
    from controller.report_api.issuer import SelfIssued
    from controller.report_api.server import ServingCertificate
    from statemachines.errors import ConfigError

    assert args.issue_serving_cert is not None
    issued = SelfIssued(kube, args.addon_namespace, args.issue_serving_cert)
    try:
        issued.ensure()
    except KubeError as error:
        raise ConfigError(f"--issue-serving-cert: {error.detail}") from error
    return ServingCertificate(*issued.files, refresher=issued.refresher)


def _authorizer(args: ReportApiSettings, config: Config) -> Authorizer:
    from controller.report_api.auth import Authorizer
    from statemachines.errors import ConfigError

    if args.authorization is not None:
        return Authorizer.load(args.authorization, profile=config.profile)
    if args.operator_identity or args.collector_identity:
        return Authorizer.from_flags(
            operator=args.operator_identity,
            collectors=args.collector_identity,
            profile=config.profile,
        )
    if args.insecure:  # never consulted: the insecure identity is unrestricted
        return Authorizer(operator=(), collectors={}, profile=config.profile)
    raise ConfigError("--authorization: who may report? give the grants file or identity flags")
