"""`addon-status check spoke`: what `addon-status run` needs, checked with its own flags and
identity (run in its pod, it reads them from the controller's command line): the API server and
the addon's CRD, the addon CR, every permission the controller uses (asked of RBAC with
SelfSubjectAccessReviews), the report API's TLS, and the hub: its kubeconfig, its copy and the
permission to write it."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
from collections.abc import Callable, Generator, Iterator

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from controller.check.findings import Access, Finding, bad, good, may
from controller.kube.api import (
    CONFIG_MAP,
    EVENT,
    LEASE,
    SECRET,
    ApiResource,
    Kube,
    KubeError,
    NotFoundError,
)
from controller.kube.connection import Connection
from controller.kube.kubeconfig import Kubeconfig
from controller.kube.rest import RestKube
from controller.report_api.flags import listen_address
from controller.report_api.issuer import decoded_secret
from controller.spoke.bookkeeping import config_map_name
from controller.spoke.options import RunOptions
from statemachines.errors import AddonStatusError
from statemachines.object_names import SPOKE_LEASE

__all__ = ["Connect", "spoke_findings"]

Connect = Callable[[Kubeconfig | None], Connection]  # controller.kube.kubeconfig.client_for
TOKEN_REVIEW = ApiResource(
    "authentication.k8s.io", "v1", "tokenreviews", "TokenReview", namespaced=False
)
RENEW_AHEAD = dt.timedelta(days=30)  # what --issue-serving-cert keeps; less is a warning sign
RBAC_HOME = "manifests/base/rbac.yaml (and the overlay's roles)"


def spoke_findings(
    options: RunOptions, connect: Connect, now: dt.datetime
) -> Iterator[Finding | str]:
    ref = options.ref
    yield f"spoke: the addon CR {ref} ({options.profile} profile)"
    try:
        kube = RestKube(connect(options.kubeconfig), request_timeout=options.request_timeout)
    except AddonStatusError as error:
        yield bad("the API server cannot be reached", str(error))
        return
    try:
        kube.discover(options.ref.resource.api_version, options.ref.resource.kind)
    except NotFoundError:
        yield bad(
            f"{options.ref.resource.kind} {options.ref.resource.api_version} is not served",
            "apply the CRD (manifests/base/crd.yaml; on OCM the AddOnTemplate carries it)",
        )
        return
    except KubeError as error:
        yield bad("the API server did not answer", str(error))
        return
    yield good(f"{options.ref.resource.kind} {options.ref.resource.api_version} is served")
    yield from _addon_cr(kube, options)
    yield from _permissions(kube, options)
    yield from _report_api(kube, options, now)
    yield from _hub(options, connect)


def _addon_cr(kube: Kube, options: RunOptions) -> Iterator[Finding]:
    try:
        found = kube.get(options.ref.resource, options.addon_namespace, options.addon_name)
    except NotFoundError:
        yield bad(
            f"the addon CR {options.ref} does not exist",
            "the endpoint operator creates it (OCM/ACM); by hand: docs/operations.md, "
            "Deploying on a spoke",
        )
        return
    except KubeError as error:
        yield bad(f"the addon CR {options.ref} cannot be read", str(error))
        return
    generation = (found.get("metadata") or {}).get("generation")
    yield good(f"the addon CR {options.ref} exists (generation {generation})")


def needed(kube: Kube, options: RunOptions) -> list[Access]:
    """Every request kind the controller makes with these options (manifests/base/rbac.yaml
    says why each is needed)."""
    namespace, name, addon = options.addon_namespace, options.addon_name, options.ref.resource
    wanted = [
        *(Access(verb, addon, namespace, name) for verb in ("get", "list", "watch")),
        Access("update", addon, namespace, name, "status"),
        Access("create", EVENT, namespace),
        Access("patch", EVENT, namespace),
    ]
    if options.leader_elect:
        lease = options.lease_ref
        wanted += [
            Access("create", LEASE, lease.namespace),
            *(Access(v, LEASE, lease.namespace, lease.name) for v in ("get", "update")),
        ]
    if not options.insecure and options.token_table is None:
        wanted.append(Access("create", TOKEN_REVIEW))
    if options.profile == "acm":
        kept = config_map_name(name)
        wanted += [
            Access("create", CONFIG_MAP, namespace),
            *(Access(v, CONFIG_MAP, namespace, kept) for v in ("get", "update")),
        ]
    if options.issue_serving_cert:
        wanted += [
            Access("create", SECRET, namespace),
            Access("create", CONFIG_MAP, namespace),
            *(Access(v, SECRET, namespace, options.issue_serving_cert) for v in ("get", "update")),
            *(
                Access(v, CONFIG_MAP, namespace, f"{options.issue_serving_cert}-ca")
                for v in ("get", "update")
            ),
        ]
    for resource in options.config().resources:
        target = resource.object
        try:
            served = kube.discover(target.api_version, target.kind)
        except KubeError:  # not served yet: its health rule says so in the status
            continue
        where = target.namespace or namespace
        wanted += [Access(v, served, where, target.name) for v in ("list", "watch")]
    return wanted


def _permissions(kube: Kube, options: RunOptions) -> Iterator[Finding]:
    try:
        wanted = needed(kube, options)
        refused = [access for access in wanted if not may(kube, access)]
    except (KubeError, AddonStatusError) as error:
        yield bad("its permissions cannot be asked (SelfSubjectAccessReview)", str(error))
        return
    for access in refused:
        yield bad(f"may not {access}", f"grant it: {RBAC_HOME}")
    if not refused:
        yield good(f"may do all {len(wanted)} kinds of request the controller makes")


def _report_api(
    kube: Kube, options: RunOptions, now: dt.datetime
) -> Generator[Finding, None, None]:
    host, port = listen_address(options)
    local = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)  # where this pod reaches it
    if options.insecure:
        yield good(
            "the report API serves plain HTTP on loopback (--insecure): only this "
            "pod's containers can report"
        )
        yield _answers(local, port, None)
        return
    if options.tls_cert_file and options.tls_key_file:
        try:
            pem = options.tls_cert_file.read_bytes()
            ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
                options.tls_cert_file, options.tls_key_file
            )
        except (OSError, ssl.SSLError) as error:
            yield bad(
                f"the serving certificate {options.tls_cert_file} or its key cannot be loaded",
                f"{type(error).__name__}: the pair must match (PEM)",
            )
            return
    elif options.issue_serving_cert:
        try:
            secret = kube.get(SECRET, options.addon_namespace, options.issue_serving_cert)
        except KubeError as error:
            yield bad(
                f"the serving certificate's Secret {options.issue_serving_cert} cannot be read",
                f"the controller issues it when it starts: its logs say why; {error}",
            )
            return
        pem = decoded_secret(secret).get("tls.crt", b"")
    else:
        yield bad(
            "the report API serves plain HTTP on every address: bearer tokens cross the "
            "network unencrypted",
            "give --tls-cert-file and --tls-key-file, or --issue-serving-cert",
        )
        return
    certificate = yield from certificate_findings(pem, now)
    if certificate is not None:
        yield _answers(local, port, certificate)


def certificate_findings(
    pem: bytes, now: dt.datetime
) -> Generator[Finding, None, x509.Certificate | None]:
    """Its findings; returns the certificate when it could be read."""
    try:
        certificate = x509.load_pem_x509_certificate(pem)
    except ValueError:
        yield bad("the serving certificate is not a PEM certificate", "replace it")
        return None
    until = certificate.not_valid_after_utc
    try:
        names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName)
        named = [*names.value.get_values_for_type(x509.DNSName),
                 *map(str, names.value.get_values_for_type(x509.IPAddress))]  # fmt: skip
    except x509.ExtensionNotFound:
        named = []
    shown = f"the serving certificate for {', '.join(named[:2]) or 'no name'}"
    if until <= now:
        yield bad(
            f"{shown} expired on {until:%Y-%m-%d}",
            "renew it (its issuer, or restart the controller with --issue-serving-cert)",
        )
    elif until - now < RENEW_AHEAD:
        yield bad(
            f"{shown} expires on {until:%Y-%m-%d}, in under 30 days",
            "renew it: reporters refuse an expired certificate",
        )
    else:
        yield good(f"{shown} is valid until {until:%Y-%m-%d}")
    return certificate


def _answers(host: str, port: int, certificate: x509.Certificate | None) -> Finding:
    """Whether the running report API answers on this pod's loopback, with that certificate."""
    where = f"{host}:{port}"
    try:
        with socket.create_connection((host, port), timeout=5) as raw:
            if certificate is None:
                return good(f"the report API answers on {where}")
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE  # compared below, byte for byte
            with context.wrap_socket(raw, server_hostname=host) as tls:
                served = tls.getpeercert(binary_form=True)
    except (OSError, ssl.SSLError) as error:
        return bad(
            f"nothing answers on {where} ({type(error).__name__})",
            "run the check in the controller's pod, where it listens: kubectl exec "
            f"deploy/{SPOKE_LEASE} -- addon-status check spoke",
        )
    if served != certificate.public_bytes(Encoding.DER):
        return bad(
            f"the report API on {where} serves another certificate",
            "restart the controller so that it loads the current one",
        )
    return good(f"the report API on {where} serves that certificate")


def _hub(options: RunOptions, connect: Connect) -> Iterator[Finding | str]:
    hub_ref = options.hub_ref
    if options.hub_kubeconfig is None or hub_ref is None:
        yield good("no hub copy to write (--hub-kubeconfig is not given)")
        return
    yield f"hub: the copy {hub_ref}"
    try:
        hub = RestKube(connect(options.hub_kubeconfig), request_timeout=options.request_timeout)
        copies = hub.discover(options.ref.resource.api_version, options.ref.resource.kind)
    except AddonStatusError as error:
        yield bad(f"the hub kubeconfig {options.hub_kubeconfig} cannot be used", str(error))
        return
    except NotFoundError:
        yield bad(
            f"the hub does not serve {hub_ref.resource.kind} {hub_ref.resource.api_version}",
            "apply the copies' CRD on the hub (manifests/hub)",
        )
        return
    except KubeError as error:
        yield bad("the hub did not answer", str(error))
        return
    yield good(f"the hub kubeconfig {options.hub_kubeconfig} reaches the hub")
    wanted = [
        Access("get", copies, hub_ref.namespace, hub_ref.name),
        Access("update", copies, hub_ref.namespace, hub_ref.name, "status"),
    ]
    if options.hub_create_missing:
        wanted.append(Access("create", copies, hub_ref.namespace))
    try:
        refused = [access for access in wanted if not may(hub, access)]
    except KubeError as error:
        yield bad("its hub permissions cannot be asked (SelfSubjectAccessReview)", str(error))
        return
    # the ClusterRole the rollout binds for this flag (its hubPermissions: the OCM template's
    # with --hub-create-missing, ACM's without), as manifests/hub/roles names it
    role = "addon-status-hub-create-missing" if options.hub_create_missing else "addon-status-hub"
    for access in refused:
        yield bad(
            f"may not {access} on the hub",
            f"bind ClusterRole {role} in the cluster's namespace (the rollout's hubPermissions; "
            "by hand: manifests/hub)",
        )
    if not refused:
        yield good("may write the copy's status on the hub")
    yield from _copy(hub, copies, options)


def _copy(hub: Kube, copies: ApiResource, options: RunOptions) -> Iterator[Finding]:
    hub_ref = options.hub_ref
    assert hub_ref is not None
    try:
        found = hub.get(copies, hub_ref.namespace, hub_ref.name)
    except NotFoundError:
        if options.hub_create_missing:
            yield good(f"the copy {hub_ref} does not exist yet: the controller creates it")
        else:
            yield bad(
                f"the copy {hub_ref} does not exist",
                "create it on the hub, or run with --hub-create-missing",
            )
        return
    except KubeError as error:
        yield bad(f"the copy {hub_ref} cannot be read", str(error))
        return
    conditions = (found.get("status") or {}).get("conditions") or []
    if conditions:
        yield good(f"the copy {hub_ref} carries {len(conditions)} conditions")
    else:
        yield bad(
            f"the copy {hub_ref} carries no conditions yet",
            "the controller writes them once it runs: its logs say why not",
        )
