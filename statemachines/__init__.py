"""The pure core of the addon status controller: vocabulary, state machines, dampening,
staleness, aggregation and conditions. No I/O, no Kubernetes, no threads, no wall clock."""

from statemachines.config import Config
from statemachines.core import (
    Change,
    Outcome,
    advance,
    apply,
    next_wakeup,
    observe_generation,
    start,
)
from statemachines.errors import (
    AddonStatusError,
    ConfigError,
    ReportError,
    ScenarioError,
    StoredStateError,
)
from statemachines.reports import Report, Verdict, VerdictKind, parse_report
from statemachines.settings import Settings
from statemachines.state import AddonState, CollectorState, to_status
from statemachines.vocabulary import SEED, ConditionType, Profile, Reason, State

__all__ = [
    "SEED",
    "AddonState",
    "AddonStatusError",
    "Change",
    "CollectorState",
    "ConditionType",
    "Config",
    "ConfigError",
    "Outcome",
    "Profile",
    "Reason",
    "Report",
    "ReportError",
    "ScenarioError",
    "Settings",
    "State",
    "StoredStateError",
    "Verdict",
    "VerdictKind",
    "advance",
    "apply",
    "next_wakeup",
    "observe_generation",
    "parse_report",
    "start",
    "to_status",
]
