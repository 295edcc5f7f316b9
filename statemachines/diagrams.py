"""Mermaid state diagrams drawn from the same rows the runtime machine is built from.

Edges are reasons; a guard is written in square brackets, as in the seed design
(`ForwardSuccessful [ForwardFailure]`: only when the current reason is ForwardFailure).
"""

from __future__ import annotations

from statemachines.machines import COLLECTOR_ROWS, INITIAL, OPERATOR_ROWS, Row

__all__ = ["DIAGRAMS", "mermaid"]


def mermaid(rows: tuple[Row, ...], *, title: str, start: str) -> str:
    lines = [
        "---",
        f"title: {title}",
        "---",
        "stateDiagram-v2",
        f"    [*] --> {INITIAL.value}: {start}",
    ]
    for row in rows:
        guards = f" [{', '.join(g.label for g in row.guards)}]" if row.guards else ""
        lines.append(f"    {row.source.value} --> {row.dest.value}: {row.trigger.value}{guards}")
    return "\n".join(lines) + "\n"


DIAGRAMS: dict[str, str] = {
    "endpoint-operator.mmd": mermaid(
        OPERATOR_ROWS,
        title="Endpoint operator - the reasons it reports about a collector",
        start="endpoint operator starts",
    ),
    "metrics-collector.mmd": mermaid(
        COLLECTOR_ROWS,
        title="Metrics collector - the reasons it reports about itself",
        start="metrics collector starts",
    ),
    "collector.mmd": mermaid(
        OPERATOR_ROWS + COLLECTOR_ROWS,
        title="One collector's machine - the union of both, as the controller runs it",
        start="controller starts",
    ),
}
