"""A scenario file as the end-to-end run plays it: the one module of the shell that reads the
core's parsed `Scenario` (statemachines.scenario), so that a change of the format's shape
changes only this file.

The expectations are checked by the same function `simulate` uses, so that a step's `expect`
means the same thing on the fake clock and on the real CR.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any, Final

from statemachines.conditions import format_precise, parse_time
from statemachines.config import Config
from statemachines.scenario import EPOCH, Scenario, Step, load
from statemachines.settings import format_duration
from statemachines.simulation import check

__all__ = ["EPOCH", "ObjectChange", "Play", "Scenario", "plays", "read", "start_generation"]


@dataclass(frozen=True)
class ObjectChange:
    """A watched object to write to the spoke as the scenario gives it, or to delete (`value`
    None); `resource` is the configured resource that watches it."""

    resource: str
    api_version: str
    kind: str
    namespace: str
    name: str
    value: dict[str, Any] | None


@dataclass(frozen=True)
class Play:
    """One step: when it happens, the CR's generation it sets, the report it sends (the report
    API's fields), what it checks."""

    index: int
    at: timedelta
    generation: int | None  # the CR's metadata.generation from this step on (its spec changed)
    report: Mapping[str, Any] | None  # collector, reason, message, observed_generation, version
    note: str
    _step: Step
    object: ObjectChange | None = None  # written after the generation, before the report

    @property
    def where(self) -> str:
        """How a failure names the step, as `simulate` does: `steps[3] (at 5m)`."""
        return f"steps[{self.index}] (at {format_duration(self.at)})"

    @property
    def checks(self) -> bool:
        return self._step.expect is not None

    def check(
        self,
        config: Config,
        answer: Mapping[str, Any] | None,
        status: Mapping[str, Any],
        offset: timedelta = timedelta(0),
    ) -> tuple[str, ...]:
        """What of this step's `expect` does not hold for the report API's `answer` to its
        report and the CR's `status`; each failure names the step, what was expected and found.
        `offset`: how much later than EPOCH this play's clock started (a later spoke of a
        fleet); the times an `expect` names are offsets from its own start."""
        return check(self._step, _shifted(status, -offset), config, verdict=answer)


# The lists of a status whose entries carry times an `expect` compares, and those times' keys.
_TIMES: Final = {
    "conditions": ("lastTransitionTime",),
    "collectors": ("lastTransitionTime", "pendingSince"),
    "history": ("lastTransitionTime",),
    "resources": (),  # their conditions'
}


def _shifted(status: Mapping[str, Any], by: timedelta) -> Mapping[str, Any]:
    """`status` with every time an `expect` compares moved by `by`: the conditions', the
    collectors' (and their pendingSince), the resources' conditions', the history's and
    lastKnownGood's since."""
    if not by:
        return status

    def moved(obj: Any, *keys: str) -> Any:
        if not isinstance(obj, Mapping):
            return obj
        out = dict(obj)
        for key in keys:
            if isinstance(out.get(key), str):
                out[key] = format_precise(parse_time(out[key]) + by)
        return out

    def each(item: Any, key: str) -> Any:
        if key != "resources":
            return moved(item, *_TIMES[key])
        conditions = item.get("conditions") if isinstance(item, Mapping) else None
        if not isinstance(conditions, list):
            return item
        return {**item, "conditions": [moved(c, "lastTransitionTime") for c in conditions]}

    shifted = {
        key: [each(item, key) for item in value] if key in _TIMES and isinstance(value, list)
        else value
        for key, value in status.items()
    }  # fmt: skip
    if "lastKnownGood" in status:
        shifted["lastKnownGood"] = moved(status["lastKnownGood"], "since")
    return shifted


def read(path: Path) -> Scenario:
    """Raises OSError when the file cannot be read, ScenarioError saying where it is invalid."""
    return load(path.read_bytes(), source=path.name)


def start_generation(scenario: Scenario) -> int:
    """The CR's metadata.generation when the scenario starts."""
    return scenario.generation


def plays(scenario: Scenario) -> list[Play]:
    return [
        Play(
            step.index,
            step.at,
            step.generation,
            _report_fields(step),
            step.note,
            step,
            _object_change(scenario, step),
        )
        for step in scenario.steps
    ]


def _object_change(scenario: Scenario, step: Step) -> ObjectChange | None:
    if step.object is None:
        return None
    resource = next(r for r in scenario.config.resources if r.name == step.object.resource)
    ref = resource.object
    return ObjectChange(
        resource.name,
        ref.api_version,
        ref.kind,
        ref.namespace or "",
        ref.name,
        step.object.value,
    )


def _report_fields(step: Step) -> dict[str, Any] | None:
    report = step.report
    if report is None:
        return None
    return {
        "collector": report.collector,
        "reason": report.reason.value,
        "message": report.message,
        "observed_generation": report.observed_generation,
        "version": report.version,
    }
