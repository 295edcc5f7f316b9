"""The report API's own serving certificate (`run --issue-serving-cert`, docs/operations.md):
issued once into a Secret on an API server (the real seam over HTTP), shared by both replicas,
renewed from the same CA before it expires or when its names change, its CA published where
reporters read it; a reporter trusting that CA reaches the report API over HTTPS."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography import x509

from controller.report_api.issuer import (
    LIFETIME,
    RENEW_BEFORE,
    SelfIssued,
    decoded_secret,
    renewal_reason,
    service_names,
)
from controller.report_api.server import ReportServer, ServingCertificate
from controller.reporter.client import ReportClient
from kubesim import APIServer
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
