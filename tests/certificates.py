"""Throwaway certificates for the tests that speak TLS: a CA, a server certificate for
127.0.0.1 it signed, and client certificates that name a user (the subject's CN) and groups
(its O entries), the way kube-apiserver reads an x509 client certificate."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["Authority", "Issued", "KeyPair", "issue", "write_whole"]


def write_whole(path: Path, data: bytes) -> Path:
    """Replace `path` in one step, as the kubelet swaps a mounted Secret's files."""
    scratch = path.with_suffix(path.suffix + ".new")
    scratch.write_bytes(data)
    os.replace(scratch, path)
    return path


@dataclass(frozen=True)
class KeyPair:
    cert: bytes
    key: bytes

    def write(self, directory: Path, stem: str) -> tuple[Path, Path]:
        """`<stem>.crt` and `<stem>.key` in `directory`, each replaced whole."""
        return (
            write_whole(directory / f"{stem}.crt", self.cert),
            write_whole(directory / f"{stem}.key", self.key),
        )


class Authority:
    """A CA that signs server and client certificates, valid from five minutes ago for an
    hour (or `valid`)."""

    def __init__(self, name: str, valid: dt.timedelta = dt.timedelta(hours=1)) -> None:
        self._valid = valid
        self._key = ec.generate_private_key(ec.SECP256R1())
        self._name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
        certificate = (
            _builder(self._name, self._name, self._key.public_key(), valid)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(self._key, hashes.SHA256())
        )
        self.ca = certificate.public_bytes(serialization.Encoding.PEM)

    def server(self, dns_name: str | None = None) -> KeyPair:
        """For 127.0.0.1 (an IP address SAN, as a client checks it), or for `dns_name` alone
        (a client that connects to 127.0.0.1 must then name it: `tls-server-name`)."""
        common = dns_name or "127.0.0.1"
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])
        alternative: x509.GeneralName = (
            x509.DNSName(dns_name)
            if dns_name
            else x509.IPAddress(ipaddress.ip_address("127.0.0.1"))
        )
        return self._sign(
            name,
            x509.SubjectAlternativeName([alternative]),
            x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
        )

    def client(self, user: str, groups: tuple[str, ...] = ()) -> KeyPair:
        """A client certificate for `user` in `groups`."""
        attributes = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, g) for g in groups]
        name = x509.Name([*attributes, x509.NameAttribute(NameOID.COMMON_NAME, user)])
        return self._sign(name, x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]))

    def _sign(self, subject: x509.Name, *extensions: x509.ExtensionType) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = _builder(subject, self._name, key.public_key(), self._valid).add_extension(
            x509.BasicConstraints(ca=False, path_length=None), critical=True
        )
        for extension in extensions:
            builder = builder.add_extension(extension, critical=False)
        certificate = builder.sign(self._key, hashes.SHA256())
        pem = serialization.Encoding.PEM
        return KeyPair(
            certificate.public_bytes(pem),
            key.private_bytes(
                pem,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            ),
        )


@dataclass(frozen=True)
class Issued:
    """A CA's certificate, and a server certificate for 127.0.0.1 it signed, as PEM bytes."""

    ca: bytes
    cert: bytes
    key: bytes

    def write(
        self, directory: Path, *, stem: str = "tls", ca: str = "ca"
    ) -> tuple[Path, Path, Path]:
        """Writes ca.crt, tls.crt, tls.key; each replaced whole, as the kubelet swaps a Secret."""
        cert, key = KeyPair(self.cert, self.key).write(directory, stem)
        return write_whole(directory / f"{ca}.crt", self.ca), cert, key


def issue(name: str) -> Issued:
    authority = Authority(name)
    server = authority.server()
    return Issued(authority.ca, server.cert, server.key)


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    valid: dt.timedelta,
) -> x509.CertificateBuilder:
    now = dt.datetime.now(dt.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + valid)
    )
