"""The report API's own serving certificate (`run --issue-serving-cert`, docs/operations.md):
issued once into a Secret on an API server (the real seam over HTTP), shared by both replicas,
renewed from the same CA before it expires or when its names change, its CA published where
reporters read it; a reporter trusting that CA reaches the report API over HTTPS."""

from __future__ import annotations

import base64
import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from controller.kube.api import SECRET
from controller.report_api.issuer import (
    LIFETIME,
    RENEW_BEFORE,
    SelfIssued,
    decoded_secret,
    encoded_secret,
    issue,
    renewal_reason,
    service_names,
)
from controller.report_api.server import ReportServer, ServingCertificate
from controller.reporter.client import ReportClient
from kubesim import APIServer
from kubesim.routing import RequestInfo
from tests.report_api.conftest import TOKENS, ServerFactory
from tests.support import kube_of

pytestmark = pytest.mark.integration
NAMESPACE = "open-cluster-management-addon-observability"
NOW = dt.datetime(2026, 11, 27, 12, 0, tzinfo=dt.UTC)


@pytest.fixture
def spoke() -> Iterator[APIServer]:
    with APIServer([], namespaces=["default", NAMESPACE]) as server:
        yield server


def issuer(server: APIServer, now: dt.datetime = NOW) -> SelfIssued:
    return SelfIssued(kube_of(server), NAMESPACE, "addon-status-serving-cert", now=lambda: now)


def stored(server: APIServer) -> dict[str, bytes]:
    found = server.get_object("", "v1", "secrets", NAMESPACE, "addon-status-serving-cert")
    assert found is not None
    return decoded_secret(found)


def expiry(data: dict[str, bytes]) -> dt.datetime:
    return x509.load_pem_x509_certificate(data["tls.crt"]).not_valid_after_utc


def test_the_first_replica_issues_and_the_second_serves_the_same_pair(spoke: APIServer) -> None:
    first, second = issuer(spoke), issuer(spoke)
    issued = first.ensure()
    assert second.ensure() == issued == stored(spoke)
    for files in (first.files, second.files):
        assert files[0].read_bytes() == issued["tls.crt"]
        assert files[1].stat().st_mode & 0o077 == 0  # the key: this process only
    published = spoke.get_object("", "v1", "configmaps", NAMESPACE, "addon-status-serving-cert-ca")
    assert published is not None and published["data"]["ca.crt"] == issued["ca.crt"].decode()
    assert "ca.key" not in published["data"]
    assert renewal_reason(issued, service_names(NAMESPACE), NOW) is None
    assert expiry(issued) - NOW == LIFETIME


def test_a_pair_about_to_expire_is_renewed_from_the_same_ca(spoke: APIServer) -> None:
    issued = issuer(spoke).ensure()
    later = NOW + LIFETIME - RENEW_BEFORE + dt.timedelta(days=1)
    renewed = issuer(spoke, later).ensure()
    assert renewed["ca.crt"] == issued["ca.crt"]  # reporters keep trusting it
    assert renewed["tls.crt"] != issued["tls.crt"] and expiry(renewed) > expiry(issued)
    assert stored(spoke) == renewed


def test_a_pair_for_other_names_is_renewed(spoke: APIServer) -> None:
    issuer(spoke).ensure()
    moved = SelfIssued(kube_of(spoke), "default", "addon-status-serving-cert", now=lambda: NOW)
    assert moved.ensure()["tls.crt"] != stored(spoke)["tls.crt"]  # another namespace's Secret
    data = stored(spoke)
    assert renewal_reason(data, service_names("elsewhere"), NOW) == "it is for other names"
    assert renewal_reason({**data, "tls.crt": b"junk"}, service_names(NAMESPACE), NOW) == (
        "its certificate cannot be read"
    )


def test_a_reporter_trusting_the_published_ca_reports_over_https(
    spoke: APIServer, make_server: ServerFactory, tmp_path: Path
) -> None:
    issued = issuer(spoke, dt.datetime.now(dt.UTC))
    data = issued.ensure()
    server: ReportServer = make_server(tls=ServingCertificate(*issued.files))
    ca = tmp_path / "ca.crt"
    ca.write_bytes(data["ca.crt"])
    url = server.url.replace("127.0.0.1", "localhost")
    with ReportClient(url, token=TOKENS["operator"], ca_file=str(ca), deadline=10) as client:
        assert client.report(reason="UpdateSuccessful")["verdict"] == "accepted"


def test_issuing_is_logged_with_the_secret_named_and_nothing_of_it(
    spoke: APIServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO", logger="controller.report_api.issuer"):
        data = issuer(spoke).ensure()
    [record] = [r for r in caplog.records if r.name == "controller.report_api.issuer"]
    assert record.getMessage() == "issued the report API's serving certificate"
    assert record.__dict__["object"] == f"{NAMESPACE}/addon-status-serving-cert"
    assert data["tls.key"].decode() not in caplog.text


def another_key() -> bytes:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())  # fmt: skip


def overwrite(server: APIServer, **changed: bytes) -> None:
    """The Secret with `changed` keys (`tls_key` for `tls.key`), as someone else wrote it."""
    found = server.get_object("", "v1", "secrets", NAMESPACE, "addon-status-serving-cert")
    assert found is not None
    data = {**decoded_secret(found), **{k.replace("_", "."): v for k, v in changed.items()}}
    found["data"] = encoded_secret("addon-status-serving-cert", NAMESPACE, data)["data"]
    kube_of(server).replace(SECRET, NAMESPACE, "addon-status-serving-cert", found)


def published(server: APIServer) -> bytes:
    found = server.get_object("", "v1", "configmaps", NAMESPACE, "addon-status-serving-cert-ca")
    assert found is not None
    return str(found["data"]["ca.crt"]).encode()


def reports_over_https(
    issued: SelfIssued, ca: bytes, make_server: ServerFactory, tmp_path: Path
) -> str:
    """A reporter trusting `ca` reports to a server of `issued`'s files (loaded as `run` loads
    them: a pair that does not load stops the start); its verdict."""
    server: ReportServer = make_server(tls=ServingCertificate(*issued.files))
    trusted = tmp_path / "ca.crt"
    trusted.write_bytes(ca)
    url = server.url.replace("127.0.0.1", "localhost")
    with ReportClient(url, token=TOKENS["operator"], ca_file=str(trusted), deadline=10) as client:
        return str(client.report(reason="UpdateSuccessful")["verdict"])


def foreign_pair() -> dict[str, bytes]:
    """A pair for the right names from another CA."""
    other = issue(service_names(NAMESPACE), dt.datetime.now(dt.UTC))
    return {"tls_crt": other["tls.crt"], "tls_key": other["tls.key"]}


BROKEN = {  # what someone wrote over a Secret, what the issuer says of it, and a new CA?
    "key-not-the-certificates": (lambda: {"tls_key": another_key()},
                                 "its tls.key is not its certificate's key", False),
    "pair-from-another-ca": (foreign_pair, "its certificate was not issued by its CA", False),
    "ca-key-not-the-cas": (lambda: {"ca_key": another_key()}, "its ca.key is not its CA's key",
                           True),
    "ca-key-unreadable": (lambda: {"ca_key": b"junk"}, "its CA cannot be read", True),
}  # fmt: skip


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_secret_that_does_not_hold_together_is_renewed_once_and_served(
    spoke: APIServer,
    make_server: ServerFactory,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    case: str,
) -> None:
    """A key that is not its certificate's stopped every start (the server could not load the
    pair); a pair from another CA was served and every report failed TLS verification; a CA
    key that is not the CA's signed pairs that verify against nothing. Each is a renewal (from
    a new CA, published, where the CA cannot sign), logged once; the start goes on."""
    broken, why, new_ca = BROKEN[case]
    now = dt.datetime.now(dt.UTC)
    first = issuer(spoke, now).ensure()
    overwrite(spoke, **broken())
    caplog.clear()  # what issuing it said (a process that logs at info keeps it)
    with caplog.at_level("INFO", logger="controller.report_api.issuer"):
        issued = issuer(spoke, now)
        data = issued.ensure()
        issuer(spoke, now).ensure()  # the other replica, or the next hourly look: nothing to do
    [record] = [r for r in caplog.records if r.name == "controller.report_api.issuer"]
    assert record.__dict__["why"] == why
    assert (data["ca.crt"] != first["ca.crt"]) == new_ca
    assert published(spoke) == data["ca.crt"] and stored(spoke) == data
    assert renewal_reason(data, service_names(NAMESPACE), now) is None
    assert reports_over_https(issued, published(spoke), make_server, tmp_path) == "accepted"


def test_a_pair_renewed_while_the_ca_key_is_not_the_cas_verifies_against_the_published_ca(
    spoke: APIServer, make_server: ServerFactory, tmp_path: Path
) -> None:
    now = dt.datetime.now(dt.UTC)
    issuer(spoke, now - LIFETIME + RENEW_BEFORE - dt.timedelta(days=1)).ensure()  # expiring
    overwrite(spoke, ca_key=another_key())
    issued = issuer(spoke, now)
    issued.ensure()
    assert reports_over_https(issued, published(spoke), make_server, tmp_path) == "accepted"


def test_renewal_keeps_the_secrets_other_keys_labels_and_annotations(spoke: APIServer) -> None:
    issued = issuer(spoke).ensure()
    found = spoke.get_object("", "v1", "secrets", NAMESPACE, "addon-status-serving-cert")
    assert found is not None
    found["metadata"]["labels"] = {"team": "observability"}
    found["metadata"]["annotations"] = {"backup.example.com/include": "true"}
    found["data"]["extra.pem"] = base64.b64encode(b"someone else's").decode()
    kube_of(spoke).replace(SECRET, NAMESPACE, "addon-status-serving-cert", found)
    renewed = issuer(spoke, NOW + LIFETIME - RENEW_BEFORE + dt.timedelta(days=1)).ensure()
    assert renewed["tls.crt"] != issued["tls.crt"]
    after = spoke.get_object("", "v1", "secrets", NAMESPACE, "addon-status-serving-cert")
    assert after is not None
    assert decoded_secret(after) == renewed
    assert renewed["extra.pem"] == b"someone else's"
    assert after["metadata"]["labels"] == {"team": "observability"}
    assert after["metadata"]["annotations"] == {"backup.example.com/include": "true"}


def test_two_replicas_racing_to_publish_the_ca_both_start(spoke: APIServer) -> None:
    """The second replica read no ConfigMap just before the first created it: its create
    answers 409 AlreadyExists, which is a read, not a failed start."""
    issued = issuer(spoke).ensure()

    def configmap_get(info: RequestInfo) -> bool:
        return info.verb == "get" and info.resource == "configmaps"

    spoke.faults.fail_next(1, 404, match=configmap_get)
    assert issuer(spoke).ensure() == issued
    assert spoke.faults.pending() == 0
    assert published(spoke) == issued["ca.crt"]
