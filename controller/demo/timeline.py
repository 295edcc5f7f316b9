"""Renders a scenario run for people (a table) and for machines (JSON)."""

from __future__ import annotations

import json
import textwrap
from datetime import timedelta
from typing import Any

from statemachines.conditions import standard_true_in
from statemachines.reports import Verdict, VerdictKind
from statemachines.scenario import EPOCH
from statemachines.settings import format_duration
from statemachines.simulation import Run, TimelineRow
from statemachines.vocabulary import Profile

__all__ = ["as_json", "as_table"]


def _verdict_text(verdict: Verdict | None) -> str:
    if verdict is None:
        return ""
    if verdict.kind is VerdictKind.REFUSED:
        return f"refused [{verdict.rule}]"
    if verdict.kind is VerdictKind.PENDING and verdict.deadline is not None:
        return f"pending until {format_duration(verdict.deadline - EPOCH)}"
    return verdict.kind.value


def as_table(run: Run, width: int | None = None) -> str:
    """The run for people: a table as wide as its cells, when `width` is None or it fits;
    else, within `width`, each step on a line of its own (wrapped) and under it only what
    changed (a collector's state, the addon's)."""
    names = [c.name for c in run.scenario.config.collectors]
    header = ["at", "event", "verdict", *names, "addon", "write"]
    body = [
        [
            format_duration(row.at),
            row.event,
            _verdict_text(row.verdict),
            *(row.collectors[n] for n in names),
            row.addon,
            "*" if row.written else "",
        ]
        for row in run.timeline
    ]
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines = [f"scenario: {run.scenario.name}"]
    description = (run.scenario.description or "").strip()
    if description and width is not None and max(map(len, description.splitlines())) > width:
        for paragraph in description.split("\n\n"):  # reflowed within the terminal
            lines += textwrap.wrap(" ".join(paragraph.split()), width)
    elif description:
        lines.append(description)
    if width is None or sum(widths) + 2 * (len(widths) - 1) <= width:
        lines += ["", _line(header, widths), _line(["-" * w for w in widths], widths)]
        for row, cells in zip(run.timeline, body, strict=True):
            lines.append(_line(cells, widths))
            lines += _notes(row)
    else:
        lines += ["", *_steps(run, body, names, width)]
    lines += ["", "final status (what the CR says, and why):"]
    true = standard_true_in(run.status["conditions"])
    for condition in run.status["conditions"]:
        mark = "=>" if condition in true else "  "
        kind = f" {mark} {condition['type']:<26} {condition['status']:<8} {condition['reason']:<18}"
        message = condition["message"][:100]
        if width is not None and len(kind) + 1 + len(message) > width:  # on lines of its own
            lines.append(kind.rstrip())
            indent = " " * 6
            lines += textwrap.wrap(message, width, initial_indent=indent, subsequent_indent=indent)
        else:
            lines.append(f"{kind} {message}")
    failures = run.failures
    expectations = sum(1 for step in run.scenario.steps if step.expect is not None)
    verdict = "every expectation held" if not failures else f"{len(failures)} expectation(s) FAILED"
    lines += ["", f"{expectations} checked steps: {verdict}; {run.writes} status writes"]
    return "\n".join(lines)


def _steps(run: Run, body: list[list[str]], names: list[str], width: int) -> list[str]:
    """Each step as `at  event => verdict`, wrapped within `width`, and under it what changed."""
    lines: list[str] = []
    before: list[str] = [""] * (len(names) + 1)
    label = max(len(n) for n in [*names, "addon"])
    for row, (at, event, verdict, *states, written) in zip(run.timeline, body, strict=True):
        head = f"{at:<4} {event}" + (f" => {verdict}" if verdict else "")
        head += "  (status written)" if written else ""
        lines += textwrap.wrap(head, width, subsequent_indent=" " * 7, break_on_hyphens=False)
        for name, state, was in zip([*names, "addon"], states, before, strict=True):
            if state != was:
                indent = " " * (9 + label)
                lines += textwrap.wrap(f"       {name:<{label}}  {state}", width,
                                       subsequent_indent=indent)  # fmt: skip
        before = states
        lines += [part for note in _notes(row)
                  for part in textwrap.wrap(note, width, subsequent_indent=" " * 8)]  # fmt: skip
    return lines


def _notes(row: TimelineRow) -> list[str]:
    notes = [f"    FAILED {failure}" for failure in row.failures]
    if row.verdict and row.verdict.kind is VerdictKind.REFUSED:
        notes.append(f"    why: {row.verdict.detail}")
    return notes


def _line(cells: list[str], widths: list[int]) -> str:
    return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()


def as_json(run: Run) -> str:
    return json.dumps(
        {
            "scenario": run.scenario.name,
            "ok": run.ok,
            "failures": run.failures,
            "writes": run.writes,
            "timeline": [_row(r, run.scenario.config.profile) for r in run.timeline],
            "status": run.status,
        },
        indent=2,
    )


def _row(row: TimelineRow, profile: Profile) -> dict[str, Any]:
    return {
        "at": format_duration(row.at),
        "seconds": row.at / timedelta(seconds=1),
        "step": row.step,
        "event": row.event,
        "verdict": row.verdict.to_api(profile) if row.verdict else None,
        "collectors": dict(row.collectors),
        "addon": row.addon,
        "written": row.written,
        "failures": list(row.failures),
    }
