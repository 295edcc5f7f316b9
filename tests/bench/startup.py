"""How fast the command line answers: wall time and peak RSS of short `addon-status` commands.

Each command runs as a user runs it (the `addon-status` console script beside this Python,
or `python -c "from controller.cli import main; main()"` where there is none), `--runs` times:
the median, fastest and slowest wall time, the median CPU time (user + system, which a busy
machine does not stretch as it does the wall time) and the median peak RSS. Goal: under 0.3 s for
`--help`, `report --help` and `simulate FILE` (FILE: the demo's story, 26 simulated minutes).
`--version`, `run --help` and the bare interpreter are printed for comparison.

Each command runs once unmeasured first, with bytecode caching on (into a temporary
`PYTHONPYCACHEPREFIX`, so the source tree stays clean, even where PYTHONDONTWRITEBYTECODE is set):
an installed wheel has its bytecode compiled, and a checkout writes it at the first run.

    .venv/bin/python tests/bench/startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
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


def measure(argv: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of one run; fails on a non-zero exit."""
    started = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    assert process.stderr is not None
    if process.returncode != 0:
        raise SystemExit(f"FAILED: {argv} exited {process.returncode}: {process.stderr.read()!r}")
    process.stderr.close()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="runs per command (default 7)")
    args = parser.parse_args()

    base = launcher()
    print(f"{args.runs} runs each of {' '.join(base)} ...")
    print(f"{'':<44}{'median s':>10}{'fastest':>10}{'slowest':>10}{'CPU s':>10}{'RSS MiB':>10}")
    rows = [*COMMANDS, ("python -c pass (the interpreter alone)", None)]
    with tempfile.TemporaryDirectory(prefix="startup-bytecode-") as bytecode:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = bytecode
        for label, words in rows:
            argv = [sys.executable, "-c", "pass"] if words is None else [*base, *words]
            measure(argv, env)  # writes the bytecode
            runs = [measure(argv, env) for _ in range(args.runs)]
            report(label, runs)


def report(label: str, runs: list[tuple[float, float, float]]) -> None:
    walls, cpu, rss = ([r[i] for r in runs] for i in range(3))
    cells = [statistics.median(walls), min(walls), max(walls), statistics.median(cpu)]
    print(
        f"{label + ':':<44}{''.join(f'{c:>10.3f}' for c in cells)}{statistics.median(rss):>10.1f}"
    )


if __name__ == "__main__":
    main()
