"""The report API's serving certificate, issued by the controller itself where no issuer does
(`run --issue-serving-cert=SECRET`): plain Kubernetes has neither OpenShift's service CA nor
cert-manager, and a pod that mounts a Secret nobody writes never starts.

The Secret `SECRET` in the controller's namespace holds a CA (`ca.crt`, `ca.key`: ECDSA P-256,
ten years) and the serving pair it signed (`tls.crt`, `tls.key`: one year, for the report
Service's DNS names). Reporters trust `ca.crt`, which the ConfigMap `SECRET-ca` publishes (a
reporter mounts it; a Secret's private keys stay in the Secret). Both replicas share one pair:
the first to find no Secret creates it, the other reads it after its 409 (the ConfigMap alike).
A pair with less than 30 days left, for other names, whose key is not its certificate's or
that its CA did not sign is issued again from the same CA (reporters keep trusting it); a CA
that cannot sign (its key is not its own, it cannot be read) or expires within a year is
replaced and published. Whichever replica sees it first renews it, keeping the Secret's other
keys, and logs it once; every replica looks again every hour and rewrites its files, which the
server reloads (`controller.report_api.tls`) and which are removed when the process exits.
"""

from __future__ import annotations

import atexit
import base64
import binascii
import copy
import datetime as dt
import ipaddress
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from controller.kube.api import CONFIG_MAP, SECRET, ConflictError, Kube, KubeError, NotFoundError
from controller.kube.runnable import Runnable

__all__ = ["REPORT_SERVICE", "SelfIssued", "ca_problem", "issue", "renewal_reason"]

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


def ca_problem(data: Mapping[str, bytes], now: dt.datetime) -> str | None:
    """Why the Secret's CA cannot go on signing pairs that verify against it (a new CA is
    then issued and published); None when it can."""
    try:
        ca, key = _loaded_ca(data)
    except _UnusableError as unusable:
        return unusable.why
    if _spki(key.public_key()) != _spki(ca.public_key()):
        return "its ca.key is not its CA's key"
    if ca.not_valid_after_utc - now < LIFETIME:
        return "its CA expires within a year"
    return None


def renewal_reason(data: Mapping[str, bytes], names: list[str], now: dt.datetime) -> str | None:
    """Why the Secret's pair must be issued again (its CA's problem first); None when it
    serves: its key is its certificate's, its CA signed it, for `names`, 30 days or more."""
    problem = ca_problem(data, now)
    if problem is not None:
        return problem
    try:
        cert, held = _loaded_pair(data)
    except _UnusableError as unusable:
        return unusable.why
    if sorted(held) != sorted(names):
        return "it is for other names"
    if cert.not_valid_after_utc - now < RENEW_BEFORE:
        return f"it expires at {cert.not_valid_after_utc:%Y-%m-%dT%H:%M:%SZ}"
    return None


class _UnusableError(Exception):
    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


def _loaded_ca(data: Mapping[str, bytes]) -> tuple[Any, Any]:
    """The CA certificate and its key, an ECDSA CA's; _UnusableError says why not."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

    if not (data.get("ca.crt") and data.get("ca.key")):
        raise _UnusableError("it lacks ca.crt or ca.key")
    try:
        ca = x509.load_pem_x509_certificate(data["ca.crt"])
        key = _private_key(data["ca.key"])
        constraints = ca.extensions.get_extension_for_class(x509.BasicConstraints).value
    except (ValueError, TypeError) as error:
        raise _UnusableError("its CA cannot be read") from error
    except x509.ExtensionNotFound:
        constraints = x509.BasicConstraints(ca=False, path_length=None)
    if not constraints.ca or not isinstance(key, ec.EllipticCurvePrivateKey):
        raise _UnusableError("its CA is not an ECDSA certificate authority")
    return ca, key


def _loaded_pair(data: Mapping[str, bytes]) -> tuple[Any, list[str]]:
    """The serving certificate, whose key `tls.key` is and which `ca.crt` signed, and its DNS
    names; _UnusableError says why not."""
    from cryptography import exceptions, x509

    if not (data.get("tls.crt") and data.get("tls.key")):
        raise _UnusableError("it lacks tls.crt or tls.key")
    try:
        cert = x509.load_pem_x509_certificate(data["tls.crt"])
        key = _private_key(data["tls.key"])
        held = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, x509.ExtensionNotFound) as error:
        raise _UnusableError("its certificate cannot be read") from error
    if _spki(key.public_key()) != _spki(cert.public_key()):
        raise _UnusableError("its tls.key is not its certificate's key")
    try:
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(data["ca.crt"]))
    except (ValueError, TypeError, exceptions.InvalidSignature) as error:
        raise _UnusableError("its certificate was not issued by its CA") from error
    return cert, list(held.get_values_for_type(x509.DNSName))


def _private_key(pem: bytes) -> Any:
    """A PEM private key without a password; ValueError or TypeError when it is none."""
    from cryptography.exceptions import UnsupportedAlgorithm
    from cryptography.hazmat.primitives import serialization

    try:
        return serialization.load_pem_private_key(pem, password=None)
    except UnsupportedAlgorithm as error:
        raise ValueError("unsupported key") from error


def _spki(public_key: Any) -> bytes:
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return bytes(public_key.public_bytes(Encoding.DER, PublicFormat.SubjectPublicKeyInfo))


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
        atexit.register(shutil.rmtree, self.directory, ignore_errors=True)  # the private key
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
            try:
                self._publish(data["ca.crt"])
            except ConflictError:
                continue  # another replica published meanwhile: read theirs
            return data
        raise ConflictError(f"{self.namespace}/{self.secret}: still conflicting", status=409)

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
        new_ca = ca_problem(data, self.now()) is not None
        signer = None if new_ca else (data["ca.crt"], data["ca.key"])
        pair = issue(self.names, self.now(), signer)
        body = copy.deepcopy(found)  # its other keys, labels and annotations kept
        body["data"] = {**(found.get("data") or {}), **_encoded(pair)}
        self.kube.replace(SECRET, self.namespace, self.secret, body)
        where = f"{self.namespace}/{self.secret}"
        if new_ca:  # reporters must read the new CA from the ConfigMap
            log.warning("renewed the report API's serving certificate from a new CA",
                        extra={"why": why, "object": where})  # fmt: skip
        else:
            log.info("renewed the report API's serving certificate",
                     extra={"why": why, "object": where})  # fmt: skip
        return {**data, **pair}

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
    return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
            "metadata": {"name": name, "namespace": namespace}, "data": _encoded(data)}  # fmt: skip


def _encoded(data: Mapping[str, bytes]) -> dict[str, str]:
    return {key: base64.b64encode(value).decode() for key, value in data.items()}


def decoded_secret(obj: Mapping[str, Any]) -> dict[str, bytes]:
    """A Secret's data; a value that is not base64 is left out (and so renewed)."""
    decoded = {}
    for key, value in (obj.get("data") or {}).items():
        try:
            decoded[str(key)] = base64.b64decode(str(value), validate=True)
        except (binascii.Error, ValueError):
            continue
    return decoded
