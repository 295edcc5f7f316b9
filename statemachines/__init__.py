"""The pure core of the addon status controller: vocabulary, state machines, dampening,
staleness, aggregation and conditions. No I/O, no Kubernetes, no threads, no wall clock."""

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
