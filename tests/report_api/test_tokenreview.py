"""TokenReview authentication against the embedded API server, through the real `kubernetes`
client over HTTP: reviewed identities get their grants; positive answers are cached for the TTL
and no longer; negative ones are not cached; an API server that cannot review answers 503; and
no token shows in any log, the kubernetes client's and urllib3's included."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.kube.connection import Connection
from controller.kube.rest import RestKube
from controller.report_api.auth import AuthenticationError, Identity, TokenReviewAuthenticator
from controller.report_api.server import ReportServer
from kubesim import APIServer, UserInfo
from tests.report_api.conftest import MC_SA, OPERATOR_SA, TOKENS, UWL_SA, ServerFactory, call
from tests.support import MC, connection

pytestmark = pytest.mark.integration

CRD = Path(__file__).resolve().parents[2] / "manifests" / "base" / "crd.yaml"
CONTROLLER_SA = "system:serviceaccount:open-cluster-management-addon-observability:addon-status"
CONTROLLER_TOKEN = "controller-tok-5e7a9c1b3d"
ALL_TOKENS = {
    CONTROLLER_TOKEN: UserInfo(CONTROLLER_SA),
    TOKENS["operator"]: UserInfo(OPERATOR_SA, uid="op-uid"),
    TOKENS["mc"]: UserInfo(MC_SA, uid="mc-uid", groups=("system:serviceaccounts",)),
    TOKENS["uwl"]: UserInfo(UWL_SA),
}


class Ticker:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def apiserver() -> Iterator[APIServer]:
    with APIServer([CRD], tokens=ALL_TOKENS) as server:
        yield server


@pytest.fixture
def spoke(apiserver: APIServer) -> Iterator[Connection]:
    with connection(apiserver, CONTROLLER_TOKEN) as spoke_client:
        yield spoke_client


@pytest.fixture
def ticker() -> Ticker:
    return Ticker()


@pytest.fixture
def reviewer(spoke: Connection, ticker: Ticker) -> TokenReviewAuthenticator:
    return TokenReviewAuthenticator(
        RestKube(spoke, request_timeout=5.0), cache_ttl=10.0, clock=ticker
    )


@pytest.fixture
def reviewed(make_server: ServerFactory, reviewer: TokenReviewAuthenticator) -> ReportServer:
    return make_server(authenticator=reviewer)


def reviews(apiserver: APIServer) -> int:
    return apiserver.count_requests(verbs={"create"}, resource="tokenreviews", successful=False)


def test_a_reviewed_identity_gets_its_grants(reviewed: ReportServer) -> None:
    ok = call(reviewed.url, body={"collector": MC, "reason": "ForwardFailure"}, token=TOKENS["mc"])
    assert (ok.status, ok.body["verdict"]) == (200, "accepted")
    body = {"collector": MC, "reason": "UpdateFailure"}
    denied = call(reviewed.url, body=body, token=TOKENS["mc"])
    assert (denied.status, denied.body["error"]["field"]) == (403, "reason")
    assert call(reviewed.url, body=body, token=TOKENS["operator"]).status == 200


def test_the_review_carries_username_and_groups(reviewer: TokenReviewAuthenticator) -> None:
    identity = reviewer.authenticate(TOKENS["mc"])
    assert identity == Identity(MC_SA, ("system:serviceaccounts", "system:authenticated"))


def test_an_unknown_token_is_401_invalid_token(reviewed: ReportServer) -> None:
    answer = call(reviewed.url, body={"reason": "UpdateSuccessful"}, token="forged-tok-0a2c4e6b8d")
    assert answer.status == 401
    assert 'error="invalid_token"' in answer.headers["WWW-Authenticate"]


def test_positive_answers_are_cached_for_the_ttl_only(
    reviewer: TokenReviewAuthenticator, apiserver: APIServer, ticker: Ticker
) -> None:
    reviewer.authenticate(TOKENS["mc"])
    reviewer.authenticate(TOKENS["mc"])
    assert reviews(apiserver) == 1
    # Revoked on the API server: the cache still vouches for it until the TTL ends.
    apiserver.set_tokens({k: v for k, v in ALL_TOKENS.items() if k != TOKENS["mc"]})
    ticker.now += 9.9
    assert reviewer.authenticate(TOKENS["mc"]).username == MC_SA
    ticker.now += 0.2
    with pytest.raises(AuthenticationError):
        reviewer.authenticate(TOKENS["mc"])
    assert reviews(apiserver) == 2


def test_negative_answers_are_not_cached(
    reviewer: TokenReviewAuthenticator, apiserver: APIServer
) -> None:
    with pytest.raises(AuthenticationError):
        reviewer.authenticate("new-tok-1c3e5a7b9d")
    apiserver.set_tokens(ALL_TOKENS | {"new-tok-1c3e5a7b9d": UserInfo("system:serviceaccount:x:y")})
    assert reviewer.authenticate("new-tok-1c3e5a7b9d").username == "system:serviceaccount:x:y"


def test_the_cache_is_bounded(spoke: Connection, apiserver: APIServer, ticker: Ticker) -> None:
    reviewer = TokenReviewAuthenticator(RestKube(spoke), max_entries=1, clock=ticker)
    reviewer.authenticate(TOKENS["mc"])
    reviewer.authenticate(TOKENS["uwl"])
    reviewer.authenticate(TOKENS["mc"])
    assert reviews(apiserver) == 3


def test_an_audience_the_api_server_confirms_is_accepted(
    spoke: Connection, apiserver: APIServer
) -> None:
    reviewer = TokenReviewAuthenticator(RestKube(spoke), audiences=["addon-status"])
    assert reviewer.authenticate(TOKENS["operator"]).username == OPERATOR_SA
    last = [r for r in apiserver.audit if r.resource == "tokenreviews"][-1]
    assert last.user == CONTROLLER_SA


@pytest.mark.parametrize("code", [403, 500, 503])
def test_an_api_server_that_cannot_review_makes_it_503(
    reviewed: ReportServer, apiserver: APIServer, code: int, caplog: pytest.LogCaptureFixture
) -> None:
    apiserver.faults.fail_next(1, code, match=lambda info: info.resource == "tokenreviews")
    with caplog.at_level(logging.ERROR, logger="controller.report_api.auth"):
        answer = call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["operator"])
    assert (answer.status, answer.body["error"]["reason"]) == (503, "ServiceUnavailable")
    assert answer.headers["Retry-After"] == "1"
    assert "TokenReview failed" in caplog.text
    # The next request is reviewed afresh and succeeds.
    assert (
        call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["operator"]).status
        == 200
    )


def test_an_unreachable_api_server_makes_it_503(
    reviewed: ReportServer, apiserver: APIServer
) -> None:
    apiserver.stop()
    answer = call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["operator"])
    assert answer.status == 503


def test_no_token_reaches_any_log(
    reviewed: ReportServer, apiserver: APIServer, caplog: pytest.LogCaptureFixture
) -> None:
    forged = "forged-tok-6d8f0b2a4c"
    with caplog.at_level(logging.DEBUG):
        call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["operator"])
        call(reviewed.url, body={"collector": MC, "reason": "ForwardFailure"}, token=TOKENS["mc"])
        call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=forged)
        apiserver.faults.fail_next(1, 403, match=lambda info: info.resource == "tokenreviews")
        call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=TOKENS["uwl"])
        apiserver.stop()
        call(reviewed.url, body={"reason": "UpdateSuccessful"}, token=forged)
    assert caplog.records
    logged = caplog.text + repr([vars(r) for r in caplog.records])
    for secret in [*TOKENS.values(), forged, CONTROLLER_TOKEN]:
        assert secret not in logged
