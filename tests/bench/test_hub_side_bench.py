"""The hub-side benchmark still runs and still measures what it claims, at a tiny size, with
both sizes of copy: one ManagedClusterAddOn write per visible change of a hub copy, none
otherwise; every figure of one answer's decoding printed. No timing is asserted."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCH = Path(__file__).resolve().parent


@pytest.mark.parametrize("size", ["realistic", "small"])
def test_the_hub_side_writes_once_per_visible_change_and_never_otherwise_and_reads_nothing(
    size: str,
) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(BENCH / "hub_side.py"),
            *("--clusters", "3", "--resync", "1", "--runs", "1", "--ocm-window", "2"),
            *("--copy-size", size),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=BENCH.parents[1],
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"--copy-size {size}" in done.stdout
    writes = dict(re.findall(r"writes per cluster, ([\w -]+):\s+([\d.]+)", done.stdout))
    assert writes == {
        "first mirror": "1.00",
        "visible change": "1.00",
        "change not mirrored": "0.00",
        "resync": "0.00",
    }
    ratios = re.findall(r"peak / (?:wire|line):\s+([\d.]+)", done.stdout)
    assert len(ratios) == 6 and all(float(r) > 0 for r in ratios), done.stdout
    verdicts = re.findall(r"the wire: [\d.]+: (holds|MISSED)", done.stdout)
    assert len(verdicts) == 6, done.stdout
