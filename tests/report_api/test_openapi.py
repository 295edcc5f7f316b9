"""The OpenAPI description is served, is valid OpenAPI 3.1, and tells the truth: its paths and
methods are the ones the server answers, its request schema accepts exactly the bodies the
server accepts, and every answer the server gives fits the documented response schema."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema import Draft202012Validator
from openapi_spec_validator import OpenAPIV31SpecValidator

from controller.report_api.auth import InsecureAuthenticator
from controller.report_api.openapi import openapi_document
from controller.report_api.server import ReportServer
from statemachines.config import Config
from tests.report_api.conftest import TOKENS, CoreSink, ServerFactory, call
from tests.support import MC, UWL

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def served(server: ReportServer) -> dict[str, Any]:
    answer = call(server.url, "GET", "/openapi.json")
    assert answer.status == 200
    assert answer.headers["Content-Type"] == "application/json"
    document: dict[str, Any] = answer.body
    return document


def schema(document: dict[str, Any], name: str) -> Draft202012Validator:
    found = document["components"]["schemas"][name]
    return Draft202012Validator(found, format_checker=Draft202012Validator.FORMAT_CHECKER)


def test_the_document_is_served_and_valid_openapi_3_1(server: ReportServer, config: Config) -> None:
    document = served(server)
    assert document["openapi"].startswith("3.1")
    OpenAPIV31SpecValidator(document).validate()
    assert document == openapi_document(config)


def test_documented_operations_are_the_served_ones(server: ReportServer) -> None:
    document = served(server)
    documented = {
        (path, method.upper()) for path, item in document["paths"].items() for method in item
    }
    assert documented == {("/v1/reports", "POST"), ("/openapi.json", "GET")}
    for path in document["paths"]:
        for method in METHODS:
            status = call(server.url, method, path, body=b"{}", token=TOKENS["operator"]).status
            assert (status == 405) == ((path, method) not in documented), (path, method, status)
    assert call(server.url, "GET", "/v2/reports").status == 404


def test_the_report_schema_follows_the_configured_collectors(make_server: ServerFactory) -> None:
    server = make_server(config=Config.create(collectors=[MC]))
    collectors = served(server)["components"]["schemas"]["Report"]["properties"]["collector"]
    assert collectors["enum"] == [MC, None]


BODIES = [
    pytest.param({"reason": "UpdateSuccessful"}, id="operator-about-all"),
    pytest.param({"reason": "UpdateSuccesful"}, id="the-seed-spelling"),
    pytest.param({"reason": "DisabledMetrics", "collector": None}, id="collector-null"),
    pytest.param({"reason": "UpdateFailure", "collector": UWL, "message": "rollout"}, id="full"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": 0}, id="generation-zero"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": None}, id="generation-null"),
    pytest.param({"reason": "ForwardFailure", "collector": MC}, id="collector-reason"),
    pytest.param({}, id="no-reason"),
    pytest.param({"reason": "Flapping"}, id="unknown-reason"),
    pytest.param({"reason": "ReportsStale", "collector": MC}, id="controller-reason"),
    pytest.param({"reason": "NoReportYet"}, id="sentinel-reason"),
    pytest.param({"reason": "UpdateFailure", "collector": "other"}, id="unknown-collector"),
    pytest.param({"reason": "UpdateFailure", "collector": 1}, id="collector-int"),
    pytest.param({"reason": "UpdateFailure", "message": 1}, id="message-int"),
    pytest.param({"reason": "UpdateFailure", "message": None}, id="message-null"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": 3.0}, id="generation-3.0"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": 3.5}, id="generation-3.5"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": -1}, id="generation-negative"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": "1"}, id="generation-string"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": True}, id="generation-bool"),
    pytest.param({"reason": "UpdateFailure", "extra": 1}, id="unknown-field"),
    pytest.param({"reason": "ForwardFailure"}, id="collector-reason-without-collector"),
    pytest.param({"reason": "ForwardSuccessful", "collector": None}, id="collector-reason-null"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": 2**63}, id="generation-2-63"),
    pytest.param({"reason": "UpdateFailure", "observedGeneration": 2**63 - 1}, id="generation-max"),
    pytest.param({"reason": "UpdateSuccessful", "version": "2.15.0"}, id="version-with-update"),
    pytest.param({"reason": "UpdateSuccesful", "version": "2.15.0"}, id="version-seed-spelling"),
    pytest.param({"reason": "UpdateFailure", "version": None}, id="version-null"),
    pytest.param({"reason": "UpdateFailure", "version": "2.15.0"}, id="version-with-failure"),
    pytest.param({"reason": "UpdateSuccessful", "version": "v" * 65}, id="version-too-long"),
    pytest.param({"reason": "UpdateSuccessful", "version": ""}, id="version-empty"),
    pytest.param({"reason": "UpdateSuccessful", "version": 2.15}, id="version-number"),
]


@pytest.mark.parametrize("body", BODIES)
def test_the_request_schema_accepts_what_the_server_accepts(
    make_server: ServerFactory, sink: CoreSink, body: dict[str, Any]
) -> None:
    """Insecure mode, so that only the body decides; 200 or 422, as the schema predicts."""
    server = make_server(authenticator=InsecureAuthenticator())
    valid = schema(served(server), "Report").is_valid(body)
    answer = call(server.url, body=body)
    assert answer.status == (200 if valid else 422), answer.body


def test_every_answer_fits_its_documented_schema(
    make_server: ServerFactory, sink: CoreSink
) -> None:
    server = make_server(submit_timeout=0.05)
    document = served(server)
    responses = document["paths"]["/v1/reports"]["post"]["responses"]
    verdict, error = schema(document, "Verdict"), schema(document, "Error")
    op, mc = TOKENS["operator"], TOKENS["mc"]
    answers = [
        call(server.url, body={"reason": "UpdateSuccessful"}, token=op),  # accepted
        call(server.url, body={"reason": "UpdateSuccessful"}, token=op),  # heartbeat
        call(server.url, body={"collector": MC, "reason": "ForwardSuccessful"}, token=mc),
        call(server.url, body={"collector": MC, "reason": "ForwardFailure"}, token=mc),  # pending
        call(server.url, body={"collector": MC, "reason": "NotSupported"}, token=op),  # refused
        call(server.url, body=b"{", token=op),
        call(server.url, body={"reason": "UpdateSuccessful"}),
        call(server.url, body={"collector": MC, "reason": "UpdateFailure"}, token=mc),
        call(server.url, body=b"{}", token=op, headers={"Content-Length": "70000"}),
        call(server.url, body=b"{}", token=op, headers={"Content-Type": "text/plain"}),
        call(server.url, body={"reason": "Nope"}, token=op),
    ]
    sink.leader = False
    answers.append(call(server.url, body={"reason": "UpdateSuccessful"}, token=op))
    sink.leader = True
    sink.free.clear()
    answers.append(call(server.url, body={"reason": "UpdateSuccessful"}, token=op))
    verdicts = {a.body["verdict"] for a in answers if a.status == 200}
    assert verdicts == {"accepted", "heartbeat", "pending", "refused"}
    assert {a.status for a in answers} == {200, 400, 401, 403, 413, 415, 422, 503}
    for answer in answers:
        assert str(answer.status) in responses
        validator = verdict if answer.status == 200 else error
        assert not list(validator.iter_errors(answer.body)), answer.body
