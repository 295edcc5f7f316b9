"""Timing settings: the dampening windows and the staleness limit, as a small validated value.

Durations are written as in Kubernetes and Go (`90s`, `10m`, `1h30m`); a bare number is seconds.
"""

from __future__ import annotations

import functools
import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

__all__ = ["LONGEST", "Duration", "Settings", "format_duration", "parse_duration"]

_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
LONGEST = timedelta(days=3650)  # any window or limit: far beyond use, far from overflowing a time
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(value: object) -> timedelta:
    """`10m` -> 10 minutes. Raises ValueError with the accepted form when `value` is not one."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and _NUMBER.fullmatch(value):
        seconds = float(value)  # a bare number is seconds
    elif isinstance(value, str) and value and _PART.sub("", value) == "":
        seconds = sum(float(n) * _UNIT[u] for n, u in _PART.findall(value))
    else:
        raise ValueError(f"{value!r} is not a duration (write e.g. 30s, 10m, 1h30m)")
    if seconds < 0:
        raise ValueError(f"{value!r} is negative")
    if seconds > LONGEST.total_seconds():
        raise ValueError(
            f"{str(value)[:40]!r} is longer than {format_duration(LONGEST)} (10 years)"
        )
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The inverse of `parse_duration`, shortest form: 630s -> `10m30s`."""
    total = value.total_seconds()
    if total == 0:
        return "0s"
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    text = (f"{int(hours)}h" if hours else "") + (f"{int(minutes)}m" if minutes else "")
    if seconds:
        text += f"{seconds:g}s"
    return text


Duration = Annotated[timedelta, BeforeValidator(parse_duration)]


class Settings(BaseModel):
    """How long a signal must hold before it changes a collector's state, and how much history
    the addon keeps.

    `staleAfter` defaults to three report intervals: one lost report is not an outage.
    """

    model_config = ConfigDict(frozen=True, populate_by_name=True, extra="forbid")

    degrade_after: Duration = Field(default=timedelta(minutes=10), alias="degradeAfter")
    recover_after: Duration = Field(default=timedelta(0), alias="recoverAfter")
    report_interval: Duration = Field(default=timedelta(minutes=5), alias="reportInterval")
    stale_after: Duration | None = Field(default=None, alias="staleAfter")
    # The addon's, not a collector's (docs/spec.md §9): how many changes `status.history` keeps.
    history_limit: int = Field(default=10, ge=0, le=1000, alias="historyLimit", strict=True)

    @model_validator(mode="after")
    def _check(self) -> Settings:
        if self.report_interval <= timedelta(0):
            raise ValueError("reportInterval must be positive")
        if self.stale_after is not None and self.stale_after <= timedelta(0):
            raise ValueError("staleAfter must be positive")
        return self

    @functools.cached_property  # asked for every collector on every report
    def staleness_limit(self) -> timedelta:
        return self.stale_after if self.stale_after is not None else 3 * self.report_interval

    def overridden(self, overrides: dict[str, Any]) -> Settings:
        """These settings with a collector's own values on top (validated the same way)."""
        merged = self.model_dump(by_alias=True, exclude_none=True)
        return Settings.model_validate({**merged, **overrides})
