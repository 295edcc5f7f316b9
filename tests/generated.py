"""Files the repository keeps but a script writes (the rollout's AddOnTemplates, the
PrometheusRules, the dashboards): one command line for each script, to rewrite them or, with
`--check`, to say which are stale (what the tests call)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final

__all__ = ["ROOT", "write_or_check"]

ROOT: Final = Path(__file__).resolve().parents[1]


def write_or_check(
    targets: Callable[[], dict[Path, str]], argv: list[str] | None, *, module: str
) -> int:
    """Rewrite every stale target; with `--check` in `argv`, write nothing and exit 1 if one
    is stale, naming it and the command that rewrites it."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}")
    parser.add_argument("--check", action="store_true", help="exit 1 if a file is stale")
    args = parser.parse_args(argv)
    wanted = targets()
    stale = [p for p, text in wanted.items() if not p.is_file() or p.read_text("utf-8") != text]
    for path in stale:
        if args.check:
            print(f"{path.relative_to(ROOT)} is stale: python -m {module}", file=sys.stderr)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(wanted[path], encoding="utf-8")
            print(f"wrote {path.relative_to(ROOT)}")
    return 1 if stale and args.check else 0
