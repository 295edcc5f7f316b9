"""A slow request beside other clients' writes, for the tests that kubesim stalls no other
client while it admits one request (kube-apiserver checks and admits outside its storage's
locks): the order the answers come in is what is asserted, never a duration."""

from __future__ import annotations

import http.client
import json
import threading
from typing import Any

from kubernetes import client

from kubesim import APIServer


def others_first(
    server: APIServer, core: client.CoreV1Api, path: str, body: Any, *, token: str
) -> tuple[list[str], int]:
    """POST `body` to `path` as `token`, and once it is sent create three namespaces through
    `core`: the order the answers came in ("others", "slow"), and the slow one's status."""
    order: list[str] = []
    answer: list[int] = []
    sent = threading.Event()

    def slow() -> None:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
        connection.request("POST", path, json.dumps(body),
                           {"Authorization": f"Bearer {token}",
                            "Content-Type": "application/json"})  # fmt: skip
        sent.set()
        reply = connection.getresponse()
        reply.read()
        answer.append(reply.status)
        connection.close()
        order.append("slow")

    core.list_namespace()  # the client is ready before the slow request is sent
    running = threading.Thread(target=slow)
    running.start()
    sent.wait(60)
    for index in range(3):
        core.create_namespace({"metadata": {"name": f"meanwhile-{index}"}})
    order.append("others")
    running.join()
    return order, answer[0] if answer else 0
