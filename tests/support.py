"""What every kind of test shares: waiting for something another thread does."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["WAIT", "eventually"]

WAIT = 10.0  # seconds any single wait may take at most (a loaded 2-core machine)


def eventually(check: Callable[[], object], what: str = "", *, timeout: float = WAIT) -> None:
    """Poll `check` until it holds; fail naming `what` after `timeout` (never hang)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.005)
