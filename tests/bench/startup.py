"""How fast the command line answers: wall time and peak RSS of short `addon-status` commands.

Each command runs as a user runs it (the `addon-status` console script beside this Python,
or `python -c "from controller.cli import main; main()"` where there is none), `--runs` times:
the median, fastest and slowest wall time and the median peak RSS. Goal: under 0.3 s for
`--help`, `report --help` and `simulate FILE` (FILE: the demo's story, 26 simulated minutes).
`--version`, `run --help` and the bare interpreter are printed for comparison.

    .venv/bin/python tests/bench/startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STORY = ROOT / "controller" / "demo" / "story.yaml"
SCRIPT = Path(sys.executable).with_name("addon-status")
COMMANDS = [
    ("addon-status --help", ["--help"]),
    ("addon-status --version", ["--version"]),
    ("addon-status report --help", ["report", "--help"]),
    ("addon-status simulate STORY", ["simulate", str(STORY)]),
    ("addon-status run --help", ["run", "--help"]),
]


def launcher() -> list[str]:
    if SCRIPT.is_file():
        return [str(SCRIPT)]
    return [sys.executable, "-c", "import sys; from controller.cli import main; sys.exit(main())"]


def measure(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one run; fails on a non-zero exit."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.stderr is not None
    if process.returncode != 0:
        raise SystemExit(f"FAILED: {argv} exited {process.returncode}: {process.stderr.read()!r}")
    process.stderr.close()
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (default 7)")
    args = parser.parse_args()

    base = launcher()
    print(f"{args.runs} runs each of {' '.join(base)} ...")
    print(f"{'':<44}{'median s':>10}{'fastest':>10}{'slowest':>10}{'RSS MiB':>10}")
    rows = [*COMMANDS, ("python -c pass (the interpreter alone)", None)]
    for label, words in rows:
        argv = [sys.executable, "-c", "pass"] if words is None else [*base, *words]
        runs = [measure(argv) for _ in range(args.runs)]
        walls, rss = [r[0] for r in runs], [r[1] for r in runs]
        cells = [statistics.median(walls), min(walls), max(walls)]
        print(
            f"{label + ':':<44}{''.join(f'{c:>10.3f}' for c in cells)}"
            f"{statistics.median(rss):>10.1f}"
        )


if __name__ == "__main__":
    main()
