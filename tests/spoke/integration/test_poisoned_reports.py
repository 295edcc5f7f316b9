"""Bad input never wedges the worker, against the embedded API server through the real client
and over the real report API: a status write the API server rejects as invalid is rolled back
and answered 422 while the worker goes on; poisoned reports that reach the worker (a lone
surrogate, a generation no int64 holds) leave it serving; a worker that cannot write turns
`/readyz` red; a report from a future generation is refused (`FutureGeneration`) and the real
generation keeps working, also after a restart."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from controller.kube.api import InvalidError
from controller.kube.rest import RestKube
from controller.report_api.server import ReportServer
from controller.spoke.addon import AddonRef, AddonStore
from controller.spoke.app import Replica
from kubesim import APIServer, RequestInfo
from statemachines import Report, VerdictKind
from statemachines.errors import ReportError
from tests.names import R
from tests.report_api.conftest import Answer, call
from tests.spoke.fakes import NAME, NAMESPACE
from tests.spoke.integration.conftest import SPOKE_TOKEN, Addon, SpokeFactory
from tests.spoke.support import MC, UWL, WAIT, boot, collector, report, settle
from tests.support import connection, eventually

pytestmark = pytest.mark.integration


def _status_write(info: RequestInfo) -> bool:
    return (
        info.resource == "observabilityaddons"
        and info.subresource == "status"
        and (info.verb == "update")
    )


def _post(controller: Replica, body: dict[str, Any]) -> Answer:
    server = controller.report_server
    assert isinstance(server, ReportServer)
    return call(server.url, body=json.dumps(body).encode())


def _readyz(controller: Replica) -> tuple[int, str]:
    url = f"http://127.0.0.1:{controller.probes.port}/readyz?verbose"
    try:
        with urllib.request.urlopen(url, timeout=WAIT) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


@pytest.mark.parametrize(
    ("code", "why"),
    [
        pytest.param(422, "status.message: Invalid", id="invalid"),
        pytest.param(400, "status.message: Invalid", id="bad-request"),
        # kube-apiserver's limit on a request body (3 MiB) and etcd's on a value (1.5 MiB)
        pytest.param(413, "Request entity too large: limit is 3145728", id="request-too-large"),
        pytest.param(500, "etcdserver: request is too large", id="etcd-value-too-large"),
    ],
)
def test_a_refusal_is_a_refusal_rolled_back_and_never_retried(
    server: APIServer, addon: Addon, spoke: SpokeFactory, code: int, why: str
) -> None:
    controller = spoke()
    worker = controller.worker
    boot(worker, collectors=(MC,))
    stored = addon.status
    server.faults.fail_next(1, code, match=_status_write, message=why)

    answer = _post(controller, {"collector": MC, "reason": "UpdateFailure", "message": "x"})

    assert answer.status == 422
    assert f"{code}" in answer.body["error"]["message"]
    assert why in answer.body["error"]["message"]
    assert worker.state.collector(MC).state.value == "Available"  # rolled back to the CR
    assert addon.status == stored
    uid = addon.get()["metadata"]["uid"]
    eventually(
        lambda: any(
            e.reason == "StatusRejected" and e.type == "Warning" and e.involved_object.uid == uid
            for e in addon.events()
        ),
        "a StatusRejected Warning Event on the CR",
    )
    rejected = controller.registry.get_sample_value("addon_status_status_writes_rejected_total")
    assert rejected == 1.0
    again = _post(controller, {"collector": MC, "reason": "UpdateFailure", "message": "x"})
    assert (again.status, again.body["verdict"]) == (200, "accepted")
    assert collector(addon.status, MC)["state"] == "Degraded"


def test_a_lone_surrogate_reaching_the_worker_is_stored_as_u_fffd_and_the_worker_goes_on(
    addon: Addon, spoke: SpokeFactory
) -> None:
    worker = spoke().worker
    boot(worker, collectors=(MC,))
    poisoned = Report(R.FORWARD_SUCCESSFUL, UWL, "remote \ud800 write")
    assert worker.submit(poisoned, timeout=WAIT).kind is VerdictKind.ACCEPTED
    assert collector(addon.status, UWL)["message"] == "remote \ufffd write"
    after = worker.submit(report(R.UPDATE_FAILURE, MC, message="next"), timeout=WAIT)
    assert after.kind is VerdictKind.ACCEPTED
    assert collector(addon.status, MC)["state"] == "Degraded"


def test_a_generation_no_int64_holds_never_reaches_the_worker_and_the_worker_goes_on(
    addon: Addon, spoke: SpokeFactory
) -> None:
    worker = spoke().worker
    boot(worker, collectors=(MC,))
    with pytest.raises(ReportError, match="observedGeneration"):
        report(R.UPDATE_FAILURE, MC, generation=10**21)  # the Report itself refuses it
    largest = report(R.UPDATE_FAILURE, MC, generation=2**63 - 1)
    verdict = worker.submit(largest, timeout=WAIT)
    assert (verdict.kind, verdict.rule) == (VerdictKind.REFUSED, "FutureGeneration")
    after = worker.submit(report(R.UPDATE_FAILURE, MC, generation=1), timeout=WAIT)
    assert after.kind is VerdictKind.ACCEPTED
    assert collector(addon.status, MC)["state"] == "Degraded"


def test_the_store_reports_a_real_422_naming_the_field(server: APIServer, addon: Addon) -> None:
    store = AddonStore(RestKube(connection(server, SPOKE_TOKEN)), AddonRef(NAMESPACE, NAME))
    obj = store.get()
    obj["status"] = {"collectors": [{"name": MC, "observedGeneration": 2**63}]}
    with pytest.raises(InvalidError) as caught:
        store.replace_status(obj)
    assert caught.value.status == 422
    assert "status.collectors[0].observedGeneration" in str(caught.value)


def test_readyz_fails_while_status_writes_fail_and_recovers(
    server: APIServer, addon: Addon, spoke: SpokeFactory
) -> None:
    controller = spoke(unready_after=0.0)
    worker = controller.worker
    settle(worker)
    assert _readyz(controller)[0] == 200
    server.faults.fail_next(10_000, 503, match=_status_write)
    addon.change_spec(enableMetrics=False)  # a new generation: the conditions must follow it
    eventually(lambda: _readyz(controller)[0] == 503, "not ready while the write fails")
    assert "[-]status-write failed" in _readyz(controller)[1]
    server.faults.reset()
    eventually(lambda: _readyz(controller)[0] == 200, "ready once the write went through")


def test_a_report_from_the_future_is_refused_and_the_real_generation_keeps_working(
    addon: Addon, spoke: SpokeFactory
) -> None:
    controller = spoke()
    future = {"reason": "UpdateSuccessful", "observedGeneration": 2**53 + 1}
    answer = _post(controller, future)
    assert (answer.status, answer.body["verdict"], answer.body["rule"]) == (
        200,
        "refused",
        "FutureGeneration",
    )
    real = _post(controller, {"reason": "UpdateSuccessful", "observedGeneration": 1})
    assert (real.status, real.body["verdict"]) == (200, "accepted")
    assert {c.get("observedGeneration") for c in addon.status["conditions"]} == {1}

    controller.stop()
    restarted = spoke()
    assert _post(restarted, future).body["rule"] == "FutureGeneration"
    forwarding = {"collector": MC, "reason": "ForwardSuccessful", "observedGeneration": 1}
    assert _post(restarted, forwarding).body["verdict"] == "accepted"
    generation = addon.change_spec(enableMetrics=False)
    moved = {"collector": MC, "reason": "ForwardFailure", "observedGeneration": generation}
    assert _post(restarted, moved).body["verdict"] in ("pending", "accepted")
