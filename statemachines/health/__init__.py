"""Health rules on watched objects (docs/spec.md §8): pure, with `now` passed in.

The API, for the core's entry points and the shell:

- Load: `load_resources(raw, namespace=..., collectors=...) -> tuple[Resource, ...]` validates
  the `resources` list (pydantic) and compiles every JSONPath key and CEL expression; a mistake
  is a `ConfigError` naming the path, the resource and the expression.
- An object event: `evaluate(resource, obj_or_None) -> Result` applies the rule, and
  `count(previous, result, now, for_=...) -> CountedHealth` counts it with the resource's `for`.
- Time passing: `advance(resources, counted, now)` fires every pending result due by `now`;
  `next_wakeup(resources, counted)` is the earliest deadline, for the shell's timer.
- Start: `start(resources, stored, now)` gives every configured resource its stored entry or,
  before its object is read, `Unknown`/`NotFound`.
- Writing: `resources_to_api(resources, counted)` is `status.resources[]`,
  `resources_from_api(raw, resources)` reads it back (pending results included);
  `resources_healthy(resources, counted, previous=..., now=..., generation=...)` is the
  `ResourcesHealthy` condition (None when no resource is configured).
- Aggregation: `overlay(contributions, resources, counted, profile=...)` raises each counted
  collector's reason to its resources' floor (`ResourceUnhealthy`, `UpdateSuccessful`);
  `addon_message(collectors_part, resources, counted)` appends the resources not `Healthy`.

`counted` is always a mapping from resource name to `CountedHealth`, plain frozen data.
"""

from statemachines.health.counted import (
    CountedHealth,
    Pending,
    advance,
    count,
    next_wakeup,
    start,
)
from statemachines.health.overlay import addon_message, collector_health, overlay
from statemachines.health.resources import Resource, load_resources
from statemachines.health.rules import Result, evaluate
from statemachines.health.status import (
    not_healthy,
    resources_from_api,
    resources_healthy,
    resources_to_api,
)
from statemachines.health.vocabulary import RESOURCES_HEALTHY, Health, HealthReason

__all__ = [
    "RESOURCES_HEALTHY",
    "CountedHealth",
    "Health",
    "HealthReason",
    "Pending",
    "Resource",
    "Result",
    "addon_message",
    "advance",
    "collector_health",
    "count",
    "evaluate",
    "load_resources",
    "next_wakeup",
    "not_healthy",
    "overlay",
    "resources_from_api",
    "resources_healthy",
    "resources_to_api",
    "start",
]
