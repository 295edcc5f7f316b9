"""The fast lane: `pytest -m "not slow"` outside CI tries fewer property examples (a hypothesis
profile, and tests/properties.py where a test sets its own count); CI (`CI=true`, `.ci/run`) and
the whole suite try them all."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

settings.register_profile("fast-lane", max_examples=10)


def pytest_configure(config: pytest.Config) -> None:
    fast = "not slow" in (config.option.markexpr or "") and os.environ.get("CI") != "true"
    if fast:
        os.environ["ADDON_STATUS_FAST_LANE"] = "1"
        settings.load_profile("fast-lane")
