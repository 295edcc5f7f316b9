"""The pure core of the addon status controller: vocabulary, state machines, dampening,
staleness, aggregation and conditions. No I/O, no Kubernetes, no threads, no wall clock.

Its names load on first use (PEP 562), so that a module that needs one of them, such as
`statemachines.errors` for the report client, does not load the whole core and pydantic."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from statemachines.config import Config
    from statemachines.core import (
        advance,
        apply,
        next_wakeup,
        observe_generation,
        observe_object,
        observe_result,
        resume,
        start,
    )
    from statemachines.errors import (
        AddonStatusError,
        ConfigError,
        ReportError,
        ScenarioError,
        StoredStateError,
    )
    from statemachines.generations import from_the_future
    from statemachines.outcome import Cause, Change, Outcome, Position
    from statemachines.reports import Report, Verdict, VerdictKind, parse_report
    from statemachines.settings import Settings
    from statemachines.state import AddonState, CollectorState
    from statemachines.stored import to_status
    from statemachines.vocabulary import SEED, ConditionType, Profile, Reason, Rule, State

_WHERE = {
    "Config": "statemachines.config",
    "advance": "statemachines.core",
    "apply": "statemachines.core",
    "next_wakeup": "statemachines.core",
    "observe_generation": "statemachines.core",
    "observe_object": "statemachines.core",
    "observe_result": "statemachines.core",
    "resume": "statemachines.core",
    "start": "statemachines.core",
    "AddonStatusError": "statemachines.errors",
    "ConfigError": "statemachines.errors",
    "ReportError": "statemachines.errors",
    "ScenarioError": "statemachines.errors",
    "StoredStateError": "statemachines.errors",
    "from_the_future": "statemachines.generations",
    "Cause": "statemachines.outcome",
    "Change": "statemachines.outcome",
    "Outcome": "statemachines.outcome",
    "Position": "statemachines.outcome",
    "Report": "statemachines.reports",
    "Verdict": "statemachines.reports",
    "VerdictKind": "statemachines.reports",
    "parse_report": "statemachines.reports",
    "Settings": "statemachines.settings",
    "AddonState": "statemachines.state",
    "CollectorState": "statemachines.state",
    "to_status": "statemachines.stored",
    "ConditionType": "statemachines.vocabulary",
    "Profile": "statemachines.vocabulary",
    "Reason": "statemachines.vocabulary",
    "Rule": "statemachines.vocabulary",
    "SEED": "statemachines.vocabulary",
    "State": "statemachines.vocabulary",
}
__all__ = [
    "SEED",
    "AddonState",
    "AddonStatusError",
    "Cause",
    "Change",
    "CollectorState",
    "ConditionType",
    "Config",
    "ConfigError",
    "Outcome",
    "Position",
    "Profile",
    "Reason",
    "Report",
    "ReportError",
    "Rule",
    "ScenarioError",
    "Settings",
    "State",
    "StoredStateError",
    "Verdict",
    "VerdictKind",
    "advance",
    "apply",
    "from_the_future",
    "next_wakeup",
    "observe_generation",
    "observe_object",
    "observe_result",
    "parse_report",
    "resume",
    "start",
    "to_status",
]


def __getattr__(name: str) -> object:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
