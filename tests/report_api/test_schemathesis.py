"""Schemathesis against the served /openapi.json: generated reports, valid and invalid, with
every check it has (no 5xx, status codes, headers and bodies as documented, 405 for the methods
not documented, 401 without the token, valid bodies accepted, invalid ones refused). A bounded
number of cases with a fixed seed, so that a run is repeatable."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from controller.report_api.server import ReportServer
from tests.report_api.conftest import TOKENS

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_schemathesis_finds_no_failure_in_the_report_api(
    server: ReportServer, tmp_path: Path
) -> None:
    command = [sys.executable, "-m", "schemathesis.cli", "run", f"{server.url}/openapi.json"]
    command += ["--checks", "all", "--max-examples", "60", "--seed", "20261124"]
    command += ["--header", f"Authorization: Bearer {TOKENS['operator']}"]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert "No issues found" in done.stdout
