"""A valid report never wedges the spoke (docs/spec.md §6, Size), end to end in both profiles:
reports with the longest messages of the widest characters the report API accepts (16,000
emoji: 64,000 bytes of UTF-8, six times that as the client escapes them), from the operator
and every collector, round after round, through the real report API, worker and client, into
an API server that refuses what kube-apiserver refuses (a request over 3 MiB: 413; a ConfigMap
over 1 MiB: 422). Every report is answered 200, the status written stays within the budget,
the bookkeeping ConfigMap too (acm), and the spoke stays ready."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from controller.spoke.bookkeeping import KEY
from kubesim import APIServer
from statemachines.size import BUDGET, encoded_size
from tests.kubesim.test_upstream_crd import UPSTREAM_CRD
from tests.report_api.conftest import call
from tests.system.conftest import (
    CRD,
    MC,
    NAME,
    SPOKE_NAMESPACE,
    UWL,
    ReplicaFactory,
    probe,
    status_of,
)

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WIDEST = "\U0001f600" * 16_000  # 4 bytes each in UTF-8, 12 as \ud83d\ude00 in JSON


@pytest.fixture(params=["seed", "acm"])
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def crd(profile: str) -> Path:
    return UPSTREAM_CRD if profile == "acm" else CRD


def _send(url: str, body: dict[str, Any]) -> dict[str, Any]:
    raw = json.dumps(body, ensure_ascii=False).encode()
    assert len(raw) < 65_536, "within the report API's body limit"
    answer = call(url, body=raw)
    assert answer.status == 200, answer.body
    assert isinstance(answer.body, dict)
    return answer.body


def test_a_valid_report_never_wedges_the_spoke(
    spoke_server: APIServer, replicas: ReplicaFactory, profile: str
) -> None:
    """Issue item: three reports with 64 KB messages made the status PUT exceed 3 MiB (413,
    retried for ever, every later report 503); in acm one grew the ConfigMap past 1 MiB."""
    replica = replicas("a", profile=profile)
    url = replica.report_url
    rounds = [
        (None, "UpdateSuccessful"),
        (MC, "ForwardSuccessful"),
        (UWL, "ForwardSuccessful"),
        (None, "UpdateFailure"),
        (None, "UpdateSuccessful"),
        (MC, "ForwardSuccessful"),
    ]
    for round_ in range(4):
        for collector, reason in rounds:
            body = {"reason": reason, "message": f"{round_}{WIDEST}"}
            if collector is not None:
                body["collector"] = collector
            answer = _send(url, body)
            assert answer["verdict"] in {"accepted", "heartbeat"}, answer
            status = status_of(spoke_server, SPOKE_NAMESPACE)
            assert encoded_size(status) <= BUDGET
            book = spoke_server.get_object(
                "", "v1", "configmaps", SPOKE_NAMESPACE, f"{NAME}-status"
            )
            if book is not None:
                assert encoded_size(json.loads(book["data"][KEY])) <= BUDGET
    writes = [r for r in spoke_server.audit if r.pod and r.verb in {"update", "create"}]
    assert writes and all(r.code < 400 for r in writes), (
        "the API server refused the replica nothing"
    )
    assert probe(replica.probe_url, "/readyz") == 200
    history = status_of(spoke_server, SPOKE_NAMESPACE).get("history")
    if profile == "seed":
        assert history, "history kept, cut to fit"
