"""What every kind of test shares: waiting for something another thread does, the settings
`run` would parse from a command line inside a cluster, and a real `kubernetes` client for an
embedded API server."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from kubernetes import client

from controller.spoke.options import RunOptions, add_run_flags
from kubesim import APIServer

__all__ = ["IN_CLUSTER", "WAIT", "api_client", "eventually", "run_options"]

WAIT = 10.0  # seconds any single wait may take at most (a loaded 2-core machine)


def eventually(check: Callable[[], object], what: str = "", *, timeout: float = WAIT) -> None:
    """Poll `check` until it holds; fail naming `what` after `timeout` (never hang)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.005)


IN_CLUSTER = {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}


def run_options(argv: list[str], environ: dict[str, str] | None = None) -> RunOptions:
    """The options `run` would take from `argv` and `environ`, inside a cluster."""
    parser = argparse.ArgumentParser()
    add_run_flags(parser)
    return RunOptions.from_args(parser.parse_args(argv), IN_CLUSTER | (environ or {}))


def api_client(server: APIServer, token: str | None = None) -> client.ApiClient:
    """A client of `server` over HTTP, as the bearer of `token` (anonymous without one)."""
    configuration = client.Configuration(host=server.url)
    if token is not None:
        configuration.api_key = {"BearerToken": token}
        configuration.api_key_prefix = {"BearerToken": "Bearer"}
    return client.ApiClient(configuration)
