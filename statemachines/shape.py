"""The largest status a configuration can lead to (docs/spec.md §6, Size).

Texts are elastic (`size.fitted` shortens them); what is not — the lists, names, times,
generations and versions — the configuration decides. `shape_problem(config)` builds the
largest state it allows (every collector with an open window, two versions of 64 of the widest
characters and the largest generation; a full history; every resource with a pending result; the
related objects it names and the two the controller adds), writes it with every text one
character long, and measures it as the client would send it: when even that does not fit the
budget, or the CRD's list limits cannot hold it, the configuration is refused when it is loaded.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from statemachines.config import Config
from statemachines.health import CountedHealth, Health
from statemachines.health import Pending as PendingResult
from statemachines.health.resources import MAX_RESOURCES
from statemachines.placement import bookkeeping_size
from statemachines.related import RelatedObject
from statemachines.reports import GENERATION_LIMIT, VERSION_LIMIT
from statemachines.size import BUDGET, encoded_size, texts_at_shortest
from statemachines.state import AddonState, HistoryEntry, LastKnownGood, Pending, initial_state
from statemachines.stored import to_status
from statemachines.vocabulary import ConditionType, Reason, State
from statemachines.writing import write_conditions

__all__ = ["MAX_RELATED_OBJECTS", "MAX_RESOURCES", "SHELL_RELATED_OBJECTS", "shape_problem"]

MAX_RELATED_OBJECTS = 256  # ... of status.relatedObjects
SHELL_RELATED_OBJECTS = 2  # what the controller adds to them: the addon CR and the Lease
_WIDEST = "\U0001f600"  # a character the client sends as 12 bytes
_LATEST = datetime(9999, 1, 1, tzinfo=UTC)


def shape_problem(config: Config) -> str | None:
    """Why `config` could lead to a status the API server cannot store; None when it cannot."""
    if len(config.resources) > MAX_RESOURCES:
        return (
            f"resources: {len(config.resources)} configured; the CRD keeps at most "
            f"{MAX_RESOURCES} in status.resources"
        )
    related = len(config.related_objects) + SHELL_RELATED_OBJECTS
    if related > MAX_RELATED_OBJECTS:
        return (
            f"relatedObjects: {related} with the addon CR and the Lease the controller adds; the "
            f"CRD keeps at most {MAX_RELATED_OBJECTS} in status.relatedObjects"
        )
    largest = texts_at_shortest(to_status(_largest(config), measure=lambda status: 0))
    size = max(encoded_size(largest), bookkeeping_size(largest))
    if size > BUDGET:
        return (
            f"the status could take {size:,} bytes with every message at its shortest (history "
            f"{config.history_limit}, {len(config.resources)} resources, "
            f"{len(config.related_objects)} related objects); the budget is {BUDGET:,} bytes: "
            "configure fewer resources or related objects, or a smaller historyLimit"
        )
    return None


def _largest(config: Config) -> AddonState:
    version = _WIDEST * VERSION_LIMIT
    state = initial_state(config, _LATEST, generation=GENERATION_LIMIT - 1)
    collectors = tuple(
        replace(
            c,
            state=State.AVAILABLE,
            reason=Reason.FORWARD_SUCCESSFUL,
            message="x",
            observed_generation=GENERATION_LIMIT - 1,
            pending=Pending(Reason.FORWARD_FAILURE, _LATEST, "x"),
            stale=True,
            desired_version=version,
            version=version,
        )
        for c in state.collectors
    )
    health = {
        r.name: CountedHealth(
            Health.HEALTHY,
            _longest_reason(r.health_rule.single_condition_type),
            "x",
            _LATEST,
            PendingResult(Health.UNHEALTHY, "EvaluationError", "x", _LATEST),
        )
        for r in config.resources
    }
    entry = HistoryEntry(ConditionType.NOT_SUPPORTED, Reason.RESOURCE_UNHEALTHY, "x", _LATEST)
    shell = RelatedObject("x" * 253, "x" * 63, "x" * 253, "x" * 63)
    state = replace(
        state,
        collectors=collectors,
        health=health,
        history=(entry,) * config.history_limit,
        last_known_good=LastKnownGood(GENERATION_LIMIT - 1, _LATEST),
        related_objects=(*config.related_objects, *(shell,) * SHELL_RELATED_OBJECTS),
    )
    return write_conditions(state, config, _LATEST + timedelta(0))


def _longest_reason(condition_type: str | None) -> str:
    """A resource's longest reason: `<T>Condition` of its rule, else the longest fixed one."""
    return f"{condition_type}Condition" if condition_type else "NoMatchesFulfilled"
