"""A standard-library server run on a daemon thread: start, the bound port, a stop that joins.

The metrics and probe servers share it; each keeps its own handler and routes.
"""

from __future__ import annotations

import socketserver
import threading
from collections.abc import Callable

__all__ = ["ServerThread"]


class ServerThread:
    """Builds the server on `start()` (port 0 picks a free port) and serves it until `stop()`."""

    def __init__(self, name: str, build: Callable[[], socketserver.BaseServer]) -> None:
        self._name = name
        self._build = build
        self._server: socketserver.BaseServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._server = self._build()
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=self._name,
            daemon=True,
        )
        self._thread.start()

    @property
    def port(self) -> int:
        assert self._server is not None, "start() first"
        return int(self._server.server_address[1])  # type: ignore[index]

    def stop(self, timeout: float = 5.0) -> None:
        if self._server is None:
            return
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout)
        self._server = None
