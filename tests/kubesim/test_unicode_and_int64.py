"""What kube-apiserver stores or refuses when a client sends text that is not Unicode, or an
integer that no int64 holds: kubesim must never fail where kube-apiserver accepts, and must
answer 422 where it refuses.

Mirrored behaviour: kube-apiserver decodes objects with sigs.k8s.io/json (encoding/json's
rules), which replaces invalid UTF-8 and lone UTF-16 surrogates with U+FFFD instead of failing
(checked for `"\\ud800"` on a real kube-apiserver 1.36). It holds a JSON number as int64 when
the literal is one and as float64 otherwise; kube-openapi's type validator counts a float64 as
an integer only within +-(2^53-1) (swag.IsFloat64AJSONInteger) and checks a schema's `format`
first, so an out-of-range integer in an `integer`/`int64` field is a 422
`...: Invalid value: "float64": ... must be of type int64: "float64"` (read from the sources of
kube-openapi's validate/type.go and apiextensions' kubeOpenAPIResultToFieldErrors; not yet
observed on a real server)."""

from __future__ import annotations

import http.client
import json
from typing import Any

import pytest
from kubernetes import client

from kubesim import APIServer
from tests.kubesim.conftest import GROUP, NAME, PLURAL, VERSION, forwarding_condition, status_of

pytestmark = pytest.mark.integration
Custom = client.CustomObjectsApi
WHERE = "status.conditions[0].observedGeneration"


def _write_status(custom: Custom, namespace: str, **fields: Any) -> dict[str, Any]:
    obj: dict[str, Any] = custom.patch_namespaced_custom_object_status(
        GROUP,
        VERSION,
        namespace,
        PLURAL,
        NAME,
        {"status": {"conditions": [forwarding_condition(**fields)]}},
    )
    return obj


def _raw_status_patch(server: APIServer, namespace: str, body: bytes) -> tuple[int, Any]:
    """A merge patch of the status with exactly these bytes (the client would re-encode)."""
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=5)
    path = f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/{NAME}/status"
    try:
        connection.request(
            "PATCH", path, body=body, headers={"Content-Type": "application/merge-patch+json"}
        )
        response = connection.getresponse()
        return response.status, json.loads(response.read())
    finally:
        connection.close()


def _message(obj: dict[str, Any]) -> str:
    return str(obj["status"]["conditions"][0]["message"])


def test_a_lone_surrogate_is_stored_as_the_replacement_character(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    stored = _write_status(custom, namespace, message="bad \ud800 text")  # sent as "\ud800"
    assert _message(stored) == "bad \ufffd text"
    again = custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, NAME)
    assert _message(again) == "bad \ufffd text"


def test_a_surrogate_pair_is_one_character(
    custom: Custom, created: dict[str, Any], namespace: str
) -> None:
    assert _message(_write_status(custom, namespace, message="\U0001f600")) == "\U0001f600"


def test_invalid_utf8_is_stored_as_replacement_characters(
    server: APIServer, created: dict[str, Any], namespace: str
) -> None:
    body = json.dumps({"status": {"conditions": [forwarding_condition(message="XX")]}}).encode()
    # ED A0 80 is a UTF-16 surrogate encoded as UTF-8: invalid, one U+FFFD per byte, as Go.
    code, stored = _raw_status_patch(server, namespace, body.replace(b"XX", b"a\xed\xa0\x80b"))
    assert code == 200
    assert _message(stored) == "a\ufffd\ufffd\ufffdb"


@pytest.mark.parametrize(
    "generation",
    [
        pytest.param(2**63, id="just-above-int64"),
        pytest.param(10**21, id="1e21-as-integer-literal"),
        pytest.param(1e21, id="1e21-as-float-literal"),
        pytest.param(float(2**53 + 2), id="float64-beyond-2^53-as-float-literal"),
    ],
)
def test_an_integer_field_refuses_numbers_outside_int64(
    custom: Custom, created: dict[str, Any], namespace: str, generation: int | float
) -> None:
    with pytest.raises(client.ApiException) as caught:
        _write_status(custom, namespace, observedGeneration=generation)
    status = status_of(caught.value)
    assert (caught.value.status, status["reason"]) == (422, "Invalid")
    assert status["message"].endswith(
        f'{WHERE}: Invalid value: "float64": {WHERE} in body must be of type int64: "float64"'
    )
    assert status["details"]["causes"][0]["field"] == WHERE


@pytest.mark.parametrize("generation", [0, 2**53 + 1, 2**63 - 1], ids=str)
def test_an_integer_field_takes_every_int64(
    custom: Custom, created: dict[str, Any], namespace: str, generation: int
) -> None:
    stored = _write_status(custom, namespace, observedGeneration=generation)
    assert stored["status"]["conditions"][0]["observedGeneration"] == generation
