"""How many examples a property test tries: the full count in CI and in the whole suite, a tenth
(at least ten) in the fast lane, `pytest -m "not slow"` outside CI (tests/conftest.py), so that
the inner loop stays short while CI keeps its breadth."""

from __future__ import annotations

import os

__all__ = ["examples"]


def examples(full: int) -> int:
    if os.environ.get("ADDON_STATUS_FAST_LANE") == "1":
        return max(10, full // 10)
    return full
