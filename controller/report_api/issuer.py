"""The report API's serving certificate, issued by the controller itself where no issuer does
(`run --issue-serving-cert=SECRET`): plain Kubernetes has neither OpenShift's service CA nor
cert-manager, and a pod that mounts a Secret nobody writes never starts.

The Secret `SECRET` in the controller's namespace holds a CA (`ca.crt`, `ca.key`: ECDSA P-256,
ten years) and the serving pair it signed (`tls.crt`, `tls.key`: one year, for the report
Service's DNS names). Reporters trust `ca.crt`, which the ConfigMap `SECRET-ca` publishes (a
reporter mounts it; a Secret's private keys stay in the Secret). Both replicas share one pair:
the first to find no Secret creates it, the other reads it after its 409. A pair with less than
30 days left, or for other names, is issued again from the same CA (reporters keep trusting
it), by whichever replica sees it first; every replica looks again every hour and rewrites its
files, which the server reloads (`controller.report_api.tls`).
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import ipaddress
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.kube.api import CONFIG_MAP, SECRET, ConflictError, Kube, KubeError, NotFoundError
from controller.kube.runnable import Runnable

__all__ = ["REPORT_SERVICE", "SelfIssued", "issue", "renewal_reason"]

log = logging.getLogger(__name__)

REPORT_SERVICE: Final = "addon-status-reports"  # manifests/base/services.yaml
CA_LIFETIME: Final = dt.timedelta(days=3650)
LIFETIME: Final = dt.timedelta(days=365)
RENEW_BEFORE: Final = dt.timedelta(days=30)
CHECK_EVERY: Final = 3600.0
Now = Callable[[], dt.datetime]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def service_names(namespace: str, service: str = REPORT_SERVICE) -> list[str]:
    """The DNS names a reporter may use: the Service's, and `localhost` (with 127.0.0.1, for a
    reporter beside the controller and `kubectl port-forward`)."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc",
            f"{service}.{namespace}.svc.cluster.local", "localhost"]  # fmt: skip


def issue(
    names: list[str], now: dt.datetime, ca: tuple[bytes, bytes] | None = None
) -> dict[str, bytes]:
    """A serving pair for `names`, signed by `ca` (PEM certificate and key), or by a new CA."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def pem_key(key: ec.EllipticCurvePrivateKey) -> bytes:
        return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())  # fmt: skip

    start = now - dt.timedelta(minutes=5)  # a clock a little behind still accepts it
    if ca is None:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "addon-status report API CA")])
        ca_cert = (
            x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
            .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(now + CA_LIFETIME)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(x509.KeyUsage(False, False, False, False, False, True, True, False,
                                         False), critical=True)
            .sign(ca_key, hashes.SHA256())
        )  # fmt: skip
        ca = (ca_cert.public_bytes(serialization.Encoding.PEM), pem_key(ca_key))
    ca_cert = x509.load_pem_x509_certificate(ca[0])
    signer = serialization.load_pem_private_key(ca[1], password=None)
    if not isinstance(signer, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA key is not an ECDSA key")
    key = ec.generate_private_key(ec.SECP256R1())
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(start).not_valid_after(now + LIFETIME)
        .add_extension(x509.SubjectAlternativeName(
            [*(x509.DNSName(n) for n in names), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
        ), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(signer, hashes.SHA256())
    )  # fmt: skip
    served = cert.public_bytes(serialization.Encoding.PEM)
    return {"ca.crt": ca[0], "ca.key": ca[1], "tls.crt": served, "tls.key": pem_key(key)}


def renewal_reason(data: Mapping[str, bytes], names: list[str], now: dt.datetime) -> str | None:
    """Why the Secret's pair must be issued again; None when it serves."""
    from cryptography import x509

    if not all(data.get(k) for k in ("ca.crt", "ca.key", "tls.crt", "tls.key")):
        return "it lacks ca.crt, ca.key, tls.crt or tls.key"
    try:
        cert = x509.load_pem_x509_certificate(data["tls.crt"])
        ca = x509.load_pem_x509_certificate(data["ca.crt"])
        held = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except (ValueError, x509.ExtensionNotFound):
        return "its certificate cannot be read"
    if sorted(held.value.get_values_for_type(x509.DNSName)) != sorted(names):
        return "it is for other names"
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        return f"it expires at {cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
    if ca.not_valid_after_utc - now < LIFETIME:
        return "its CA expires within a year"
    return None


@dataclass
class SelfIssued:
    """The Secret `secret` and ConfigMap `secret-ca` in `namespace`, kept serving through
    `kube`; the pair written to files for the server."""

    kube: Kube
    namespace: str
    secret: str
    now: Now = _utc_now

    def __post_init__(self) -> None:
        self.names = service_names(self.namespace)
        self.directory = Path(tempfile.mkdtemp(prefix="addon-status-serving-"))
        self._written: bytes = b""
        self._stop = threading.Event()
        self.refresher = Runnable("serving-cert", self._refresh, self._stop.set)

    @property
    def files(self) -> tuple[Path, Path]:
        return self.directory / "tls.crt", self.directory / "tls.key"

    def ensure(self) -> dict[str, bytes]:
        """The pair now serving (issued or renewed if need be), written to `files`. Raises
        KubeError."""
        for _ in range(5):
            try:
                data = self._current()
            except ConflictError:
                continue  # another replica wrote it meanwhile: read theirs
            self._write(data)
            self._publish(data["ca.crt"])
            return data
        raise ConflictError(f"Secret {self.namespace}/{self.secret}: still conflicting", status=409)

    def _current(self) -> dict[str, bytes]:
        try:
            found = self.kube.get(SECRET, self.namespace, self.secret)
        except NotFoundError:
            data = issue(self.names, self.now())
            body = encoded_secret(self.secret, self.namespace, data)
            self.kube.create(SECRET, self.namespace, body)
            where = f"{self.namespace}/{self.secret}"
            log.info("issued the report API's serving certificate",
                     extra={"object": where, "names": self.names})  # fmt: skip
            return data
        data = decoded_secret(found)
        why = renewal_reason(data, self.names, self.now())
        if why is None:
            return data
        ca = (data["ca.crt"], data["ca.key"]) if data.get("ca.key") and "CA" not in why else None
        try:
            data = issue(self.names, self.now(), ca)
        except ValueError:
            data = issue(self.names, self.now())  # an unreadable CA: a new one
        body = encoded_secret(self.secret, self.namespace, data)
        body["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
        self.kube.replace(SECRET, self.namespace, self.secret, body)
        log.info("renewed the report API's serving certificate", extra={"why": why})
        return data

    def _write(self, data: Mapping[str, bytes]) -> None:
        if data["tls.crt"] + data["tls.key"] == self._written:
            return
        for name in ("tls.key", "tls.crt"):  # each replaced whole, as the kubelet does
            scratch = self.directory / f".{name}.new"
            descriptor = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(descriptor, "wb") as out:
                out.write(data[name])
            os.replace(scratch, self.directory / name)
        self._written = data["tls.crt"] + data["tls.key"]

    def _publish(self, ca: bytes) -> None:
        """The CA bundle where reporters read it."""
        name = f"{self.secret}-ca"
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name, "namespace": self.namespace},
                                "data": {"ca.crt": ca.decode()}}  # fmt: skip
        try:
            found = self.kube.get(CONFIG_MAP, self.namespace, name)
        except NotFoundError:
            self.kube.create(CONFIG_MAP, self.namespace, body)
            return
        if (found.get("data") or {}).get("ca.crt") != body["data"]["ca.crt"]:
            body["metadata"]["resourceVersion"] = found["metadata"]["resourceVersion"]
            self.kube.replace(CONFIG_MAP, self.namespace, name, body)

    def _refresh(self) -> None:
        while not self._stop.wait(CHECK_EVERY):
            try:
                self.ensure()
            except KubeError as error:
                log.warning("cannot check the serving certificate: %s", error.detail)


def encoded_secret(name: str, namespace: str, data: Mapping[str, bytes]) -> dict[str, Any]:
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace}, "data": encoded}  # fmt: skip


def decoded_secret(obj: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's data; a value that is not base64 is left out (and so renewed)."""
    decoded = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            decoded[str(key)] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            continue
    return decoded
