"""The names tests write: the collectors', and short names for the vocabulary and the
reasons a collector reports. One copy, light (no client, no server), so that every test module
and benchmark can import it."""

from __future__ import annotations

from statemachines.reports import VerdictKind
from statemachines.vocabulary import ConditionType, Reason, State

__all__ = ["DM", "FF", "FS", "MC", "NS", "RS", "UF", "US", "UWL", "R", "S", "T", "V"]

MC = "metrics-collector"
UWL = "uwl-metrics-collector"

R, S, T, V = Reason, State, ConditionType, VerdictKind
FF, FS = Reason.FORWARD_FAILURE, Reason.FORWARD_SUCCESSFUL
UF, US = Reason.UPDATE_FAILURE, Reason.UPDATE_SUCCESSFUL
DM, NS = Reason.DISABLED_METRICS, Reason.NOT_SUPPORTED
RS = Reason.REPORTS_STALE
