"""The hub-side benchmark still runs and still measures what it claims, at a tiny size: one
ManagedClusterAddOn write per visible change of a hub copy, none otherwise. No timing is
asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCH = Path(__file__).resolve().parent


def test_the_hub_side_writes_once_per_visible_change_and_never_otherwise_and_reads_nothing() -> (
    None
):
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "hub_side.py"),
            "--clusters",
            "3",
            "--resync",
            "1",
            "--runs",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=BENCH.parents[1],
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    writes = dict(re.findall(r"writes per cluster, ([\w -]+):\s+([\d.]+)", done.stdout))
    assert writes == {
        "first mirror": "1.00",
        "visible change": "1.00",
        "collector-only change": "0.00",
        "resync": "0.00",
    }
