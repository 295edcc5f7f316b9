"""Mermaid state diagrams drawn from the same rows the runtime machine is built from.

Edges are reasons; a guard is written in square brackets, as in the seed design
(`ForwardSuccessful [ForwardFailure]`: only when the current reason is ForwardFailure). A
profile other than the seed's (docs/spec.md §11) draws the same rows in its names, and labels each
state with the standard type it writes where the two differ (`Degraded (Disabled)` in acm).
"""

from __future__ import annotations

from statemachines.machines import COLLECTOR_ROWS, INITIAL, OPERATOR_ROWS, Guard, Row
from statemachines.vocabulary import ACM, SEED, Profile, Reason, State

__all__ = ["DIAGRAMS", "mermaid"]


def mermaid(rows: tuple[Row, ...], *, title: str, start: str, profile: Profile = SEED) -> str:
    lines = ["---", f"title: {title}", "---", "stateDiagram-v2"]
    for state in State:
        written = _written_type(state, profile)
        if written != state.value:
            lines.append(f'    state "{written}" as {state.value}')
    lines.append(f"    [*] --> {INITIAL.value}: {start}")
    name = profile.name_of
    for row in rows:
        guards = f" [{', '.join(_guard(g, profile) for g in row.guards)}]" if row.guards else ""
        lines.append(f"    {row.source.value} --> {row.dest.value}: {name(row.trigger)}{guards}")
    return "\n".join(lines) + "\n"


def _written_type(state: State, profile: Profile) -> str:
    """The standard type a collector in `state` makes the addon write, with the reason where
    the type alone does not tell (acm's `Degraded (Disabled)`)."""
    if state in profile.standard_types:
        return state.value
    reason = next(r.reason for r in profile.reasons if r.reported_by and _leads(r.reason, state))
    return f"{profile.spec(reason).leads_to.value} ({profile.name_of(reason)})"


def _leads(reason: Reason, state: State) -> bool:
    return SEED.spec(reason).leads_to is state  # the seed's table names the machine's states


def _guard(guard: Guard, profile: Profile) -> str:
    reason = SEED.parse_reason(guard.label)
    return profile.name_of(reason) if reason is not None else guard.label


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
    "acm-collector.mmd": mermaid(
        OPERATOR_ROWS + COLLECTOR_ROWS,
        title="One collector's machine in the acm profile's names (--profile acm)",
        start="controller starts",
        profile=ACM,
    ),
}
