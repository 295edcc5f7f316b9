"""The small tree of errors the project raises. A refused report is not one: it is a `Verdict`.

AddonStatusError
├── ReportError        a report that is not well-formed (names the field)
├── ConfigError        settings, profile or collectors that do not fit together
├── StoredStateError   a status on the CR that cannot be read back (names the field)
└── ScenarioError      a scenario file that is invalid (names the step and field)
"""

from __future__ import annotations

__all__ = ["AddonStatusError", "ConfigError", "ReportError", "ScenarioError", "StoredStateError"]


class AddonStatusError(Exception):
    """Base of every error of this project."""


class _FieldError(AddonStatusError):
    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field}: {problem}" if field else problem)
        self.field = field
        self.problem = problem


class ReportError(_FieldError):
    """Bad input in a report; `field` is the JSON name of the offending field."""


class ConfigError(AddonStatusError):
    pass


class StoredStateError(_FieldError):
    """`field` is the path in the CR's status, e.g. `status.collectors[1].state`."""


class ScenarioError(_FieldError):
    """`field` is the path in the file, e.g. `steps[3].report.reason`."""
