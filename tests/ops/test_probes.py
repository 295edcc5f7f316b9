"""The probes: their own port, kube-apiserver style bodies, 503 naming the failed check."""

from __future__ import annotations

import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from controller.ops.probes import ProbeServer, probe_report


class Flags:
    leader = True


@pytest.fixture
def server() -> Iterator[tuple[ProbeServer, type[Flags]]]:
    probes = ProbeServer(
        host="127.0.0.1",
        port=0,
        liveness={"worker": lambda: True},
        readiness={"worker": lambda: True, "leader": lambda: Flags.leader},
    )
    probes.start()
    yield probes, Flags
    probes.stop()
    Flags.leader = True


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def test_healthy_and_ready(server: tuple[ProbeServer, type[Flags]]) -> None:
    probes, _ = server
    assert get(probes.port, "/healthz") == (200, "ok")
    assert get(probes.port, "/readyz") == (200, "ok")
    code, body = get(probes.port, "/readyz?verbose")
    assert code == 200 and "[+]leader ok" in body


def test_not_ready_names_the_failed_check(server: tuple[ProbeServer, type[Flags]]) -> None:
    probes, flags = server
    flags.leader = False
    code, body = get(probes.port, "/readyz")
    assert code == 503
    assert "[-]leader failed" in body and "[+]worker ok" in body
    assert get(probes.port, "/healthz")[0] == 200


def test_other_paths_are_not_found(server: tuple[ProbeServer, type[Flags]]) -> None:
    probes, _ = server
    assert get(probes.port, "/metrics")[0] == 404


def test_a_check_that_raises_has_failed() -> None:
    def broken() -> bool:
        raise RuntimeError("bug")

    healthy, body = probe_report("readyz", {"broken": broken})
    assert not healthy and "[-]broken failed" in body
