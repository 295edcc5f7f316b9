"""The configuration file of `addon-status run --config FILE` (docs/reference/configuration.md):
what does not fit a flag, mounted from a ConfigMap.

    profile: seed                 # optional: must be the one `--profile` runs (seed, acm)
    collectorSettings:            # optional, per collector: degradeAfter, recoverAfter, ...
      uwl-metrics-collector: {degradeAfter: 5m}
    resources: [...]              # docs/spec.md §8: watched objects and their health rules
    relatedObjects:               # docs/spec.md §9: more objects to list in status.relatedObjects
      - {group: apps, resource: deployments, name: metrics-collector}   # namespace: the addon's

Validated when the controller starts: a mistake is one line naming the file, the path inside
it and what is wrong (`config.yaml: resources[1] (cert).healthRule.cel.current: CEL ...`).
Pure: the caller reads the file and passes its text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from statemachines.config import Config
from statemachines.errors import ConfigError
from statemachines.health import load_resources
from statemachines.health.resources import ObjectRef
from statemachines.related import RelatedObject
from statemachines.settings import Settings
from statemachines.shape import shape_problem
from statemachines.vocabulary import SEED, Profile
from statemachines.yamlfile import YAMLFileError, load_yaml

__all__ = [
    "ConfigurationFile",
    "RelatedObjectEntry",
    "guess_plural",
    "load_configuration",
    "resource_objects",
]


class RelatedObjectEntry(BaseModel):
    """An entry of the file's `relatedObjects`: an object to list in `status.relatedObjects`,
    as a ClusterOperator lists it (`namespace` absent: the addon's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    group: str = Field(max_length=253)
    resource: str = Field(min_length=1, max_length=63)
    namespace: str | None = Field(default=None, max_length=63)
    name: str = Field(min_length=1, max_length=253)


class ConfigurationFile(BaseModel):
    """The file's shape; `resources` are checked (and compiled) by `health.load_resources`."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    profile: str | None = None
    collector_settings: dict[str, dict[str, Any]] = Field(
        default_factory=dict, alias="collectorSettings"
    )
    resources: list[Any] | None = None
    related_objects: list[RelatedObjectEntry] = Field(default_factory=list, alias="relatedObjects")


def load_configuration(
    text: str | bytes,
    *,
    source: str,
    namespace: str,
    collectors: Sequence[str] | None = None,
    settings: Settings | None = None,
    profile: Profile = SEED,
) -> tuple[Config, ConfigurationFile]:
    """The core's configuration from the flags (`collectors`, `settings`, `profile`) and the
    file's text; objects without a namespace get `namespace` (the addon's). A `profile` in the
    file must name the one the flags chose: two sources may not disagree. Raises ConfigError
    `<source>: <path>: <what is wrong>`."""
    try:
        raw = load_yaml(text)
    except YAMLFileError as error:
        raise ConfigError(f"{source}: {error}") from None
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: a configuration file is a mapping, not {type(raw).__name__}")
    try:
        shape = ConfigurationFile.model_validate(raw)
    except ValidationError as error:
        raise ConfigError(f"{source}: {_first_problem(error)}") from error
    if shape.profile is not None and shape.profile != profile.name:
        raise ConfigError(
            f"{source}: profile: {shape.profile!r}, but the controller runs the"
            f" {profile.name!r} profile (--profile)"
        )
    try:
        base = Config.create(
            profile=profile,
            collectors=collectors,
            settings=settings,
            collector_settings=shape.collector_settings,
        )
        names = [c.name for c in base.collectors]
        resources = load_resources(shape.resources, namespace=namespace, collectors=names)
        config = Config.create(
            profile=profile,
            collectors=collectors,
            settings=settings,
            collector_settings=shape.collector_settings,
            resources=resources,
            related_objects=[_related(o, namespace) for o in shape.related_objects],
        )
    except ConfigError as error:
        raise ConfigError(f"{source}: {error}") from error
    problem = shape_problem(config)
    if problem is not None:
        raise ConfigError(f"{source}: {problem}")
    return config, shape


def resource_objects(config: Config) -> list[dict[str, str]]:
    """The objects health rules watch as `status.relatedObjects` lists them: `{group, resource,
    namespace, name}`, `resource` the plural (docs/spec.md §9)."""
    return [
        {
            "group": r.object.group,
            "resource": r.object.plural,
            "namespace": r.object.namespace or "",
            "name": r.object.name,
        }
        for r in config.resources
    ]


def _related(given: RelatedObjectEntry, namespace: str) -> RelatedObject:
    """A related object of the file; without `namespace`, in the addon's (`""` for a
    cluster-scoped one)."""
    where = namespace if given.namespace is None else given.namespace
    return RelatedObject(given.group, given.resource, given.name, where)


def guess_plural(kind: str) -> str:
    """The plural the API server derives for `kind` (see `ObjectRef.plural`)."""
    return ObjectRef(apiVersion="v1", kind=kind, name="-").plural


def _first_problem(error: ValidationError) -> str:
    """`relatedObjects[0].name: Field required`; an unknown key first."""
    detail = min(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    where = ""
    for part in detail["loc"]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    problem = {"extra_forbidden": "unknown key", "missing": "required"}.get(detail["type"])
    return f"{where}: {problem or str(detail['msg']).removeprefix('Value error, ')}"
