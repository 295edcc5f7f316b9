"""The generation rules (docs/spec.md §6), in one place.

A report may carry the `observedGeneration` of the addon CR its sender acted on. Newer than the
CR's `metadata.generation` as the core knows it: refused (`FutureGeneration`) — a reporter never
raises the generation the controller works at, so a buggy or hostile report cannot lock the real
generations out; only the CR does (`core.observe_generation`). Older than one the collector
already took: refused (`OutdatedGeneration`). A report without one is never refused for it.
"""

from __future__ import annotations

from statemachines.evolve import evolve
from statemachines.reports import Report
from statemachines.state import AddonState, CollectorState
from statemachines.vocabulary import Rule

__all__ = ["from_the_future", "refusal", "take"]


def from_the_future(state: AddonState, report: Report) -> bool:
    """The report claims a generation newer than the CR's as the core knows it. The shell asks
    this before judging, reads the CR again and hands its generation to `observe_generation`:
    only if the report is still ahead is it refused."""
    observed = report.observed_generation
    return observed is not None and observed > state.generation


def refusal(c: CollectorState, observed: int | None, current: int) -> tuple[Rule, str] | None:
    """The generation rule that refuses a report about `c`, with why; None if none does.
    `current` is the CR's `metadata.generation`."""
    if observed is None:
        return None
    if observed > current:
        why = f"generation {observed} is newer than the addon's {current} (metadata.generation)"
        return Rule.FUTURE_GENERATION, why
    if c.observed_generation is not None and observed < c.observed_generation:
        why = f"generation {observed} is older than {c.observed_generation}, already taken"
        return Rule.OUTDATED_GENERATION, why
    return None


def take(c: CollectorState, observed: int | None) -> CollectorState:
    """`c` having taken a report of `observed` (accepted, pending or heartbeat)."""
    if observed is None or observed <= (c.observed_generation or 0):
        return c
    return evolve(c, observed_generation=observed)
