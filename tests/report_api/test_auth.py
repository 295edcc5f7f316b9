"""Who may report what: the operator sends the operator's reasons about one collector or all;
a collector sends only its own reasons about itself (403 naming the field otherwise); the grants
file is validated at start, naming the field; the static token table; and the insecure mode,
which serves only on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from controller.report_api.auth import (
    AuthenticationError,
    Authorizer,
    Identity,
    InsecureAuthenticator,
    StaticTokenAuthenticator,
)
from controller.report_api.server import ReportMetrics, ReportServer
from statemachines.config import Config
from statemachines.errors import ConfigError
from statemachines.reports import Report
from statemachines.vocabulary import Reason
from tests.report_api.conftest import (
    GRANTS,
    MC_SA,
    OPERATOR_SA,
    TOKENS,
    UWL_SA,
    CoreSink,
    ServerFactory,
    call,
)
from tests.support import MC, UWL

GRANT_CASES = [
    pytest.param("operator", None, "UpdateSuccessful", None, id="operator-about-every-collector"),
    pytest.param("operator", MC, "UpdateFailure", None, id="operator-about-one-collector"),
    pytest.param("operator", UWL, "DisabledMetrics", None, id="operator-disables-uwl"),
    pytest.param("mc", MC, "ForwardFailure", None, id="collector-about-itself"),
    pytest.param("uwl", UWL, "ForwardSuccessful", None, id="uwl-collector-about-itself"),
    pytest.param("mc", MC, "UpdateFailure", "reason", id="collector-may-not-send-update-failure"),
    pytest.param("mc", None, "UpdateSuccessful", "reason", id="collector-may-not-speak-for-all"),
    pytest.param("mc", UWL, "ForwardFailure", "collector", id="collector-not-for-another"),
    pytest.param("uwl", MC, "ForwardSuccessful", "collector", id="uwl-not-for-the-primary"),
    pytest.param("operator", MC, "ForwardFailure", "reason", id="operator-not-a-collector"),
    pytest.param("stranger", MC, "ForwardFailure", "reason", id="stranger-forwards-nothing"),
    pytest.param("stranger", None, "UpdateSuccessful", "reason", id="stranger-not-the-operator"),
]


@pytest.mark.parametrize(("who", "collector", "reason", "forbidden"), GRANT_CASES)
def test_grants(
    server: ReportServer,
    sink: CoreSink,
    *,
    who: str,
    collector: str | None,
    reason: str,
    forbidden: str | None,
) -> None:
    body = {"reason": reason} | ({"collector": collector} if collector else {})
    answer = call(server.url, body=body, token=TOKENS[who])
    if forbidden is None:
        assert answer.status == 200, answer.body
        assert len(sink.judged) == 1
        return
    assert answer.status == 403
    error = answer.body["error"]
    assert (error["code"], error["reason"], error["field"]) == (403, "Forbidden", forbidden)
    assert reason in error["message"] or (collector or "") in error["message"]
    assert sink.judged == [], "a forbidden report never reaches the worker"


def test_the_issue_example_file_loads(tmp_path: Path) -> None:
    path = tmp_path / "grants.yaml"
    path.write_text(GRANTS)
    authorizer = Authorizer.load(path)
    authorizer.authorize(Identity(OPERATOR_SA), Report(Reason.UPDATE_FAILURE, MC))
    authorizer.authorize(Identity(UWL_SA), Report(Reason.FORWARD_FAILURE, UWL))


BAD_GRANTS = [
    pytest.param("operators: [a]", "operators", id="unknown-key"),
    pytest.param("operator: a", "operator", id="operator-not-a-list"),
    pytest.param("operator: [5]", "operator[0]", id="subject-not-a-string"),
    pytest.param('operator: [""]', "operator[0]", id="subject-empty"),
    pytest.param(
        "collectors: {kube-state-metrics: [a]}", "collectors.kube-state-metrics", id="collector"
    ),
    pytest.param(
        "collectors: {metrics-collector: [a, 7]}", "collectors.metrics-collector[1]", id="nested"
    ),
    pytest.param("collectors: [a]", "collectors", id="collectors-not-a-map"),
    pytest.param("[a, b]", "must be a mapping", id="not-a-map"),
    pytest.param("{}", "grants nobody", id="empty"),
]


@pytest.mark.parametrize(("text", "where"), BAD_GRANTS)
def test_bad_grants_name_the_field(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "grants.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        Authorizer.load(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert where in str(caught.value)


def test_unreadable_or_invalid_grants_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        Authorizer.load(tmp_path / "missing.yaml")
    (tmp_path / "bad.yaml").write_text("operator: [a\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        Authorizer.load(tmp_path / "bad.yaml")


def test_grants_from_flags() -> None:
    authorizer = Authorizer.from_flags(operator=[OPERATOR_SA], collectors=[f"{MC}={MC_SA}"])
    authorizer.authorize(Identity(MC_SA), Report(Reason.FORWARD_SUCCESSFUL, MC))
    with pytest.raises(ConfigError, match="NAME=SUBJECT"):
        Authorizer.from_flags(operator=[], collectors=[MC_SA])
    with pytest.raises(ConfigError, match=r"collectors\.nope"):
        Authorizer.from_flags(operator=[], collectors=[f"nope={MC_SA}"])


def test_static_token_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.csv"
    path.write_text(f'abc123,{MC_SA},uid-1,"g1,g2"\n\nxyz789,{OPERATOR_SA}\n')
    authenticator = StaticTokenAuthenticator.from_file(path)
    assert authenticator.authenticate("abc123") == Identity(MC_SA)
    assert authenticator.authenticate("xyz789") == Identity(OPERATOR_SA)
    with pytest.raises(AuthenticationError) as caught:
        authenticator.authenticate("abc12")
    assert caught.value.invalid_token
    with pytest.raises(AuthenticationError) as missing:
        authenticator.authenticate(None)
    assert not missing.value.invalid_token
    path.write_text("lonely-token\n")
    with pytest.raises(ConfigError, match="line 1"):
        StaticTokenAuthenticator.from_file(path)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.1.2.3", "192.168.0.10", "example.com", ""])
def test_insecure_mode_refuses_a_non_loopback_address(
    make_server: ServerFactory, host: str
) -> None:
    with pytest.raises(ConfigError, match="loopback") as caught:
        make_server(authenticator=InsecureAuthenticator(), host=host)
    assert repr(host) in str(caught.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "127.0.0.2"])
def test_insecure_mode_on_loopback_takes_anyone(
    make_server: ServerFactory, sink: CoreSink, host: str
) -> None:
    server = make_server(authenticator=InsecureAuthenticator(), host=host)
    answer = call(server.url, body={"collector": MC, "reason": "UpdateFailure"})
    assert (answer.status, answer.body["verdict"]) == (200, "accepted")
    answer = call(server.url, body={"collector": MC, "reason": "ForwardFailure"})
    assert answer.status == 200
    assert len(sink.judged) == 2


def test_insecure_mode_on_ipv6_loopback(make_server: ServerFactory) -> None:
    try:
        server = make_server(authenticator=InsecureAuthenticator(), host="::1")
    except ConfigError as error:
        pytest.skip(f"no IPv6 loopback here: {error}")
    assert server.url.startswith("http://[::1]:")
    assert call(server.url, body={"reason": "UpdateSuccessful"}).status == 200


def test_token_authenticators_may_serve_beyond_loopback(
    sink: CoreSink, authorizer: Authorizer, config: Config
) -> None:
    """Only constructed, never started: tests listen on loopback alone."""
    ReportServer(
        sink,
        authenticator=StaticTokenAuthenticator({}),
        authorizer=authorizer,
        config=config,
        host="0.0.0.0",
        port=0,
        metrics=ReportMetrics(CollectorRegistry()),
    )
