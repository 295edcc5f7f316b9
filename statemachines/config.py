"""What one controller watches over: the profile, the configured collectors and their timings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError

from statemachines.errors import ConfigError
from statemachines.health.resources import Resource
from statemachines.related import RelatedObject, merged
from statemachines.settings import Settings
from statemachines.vocabulary import SEED, CollectorSpec, Profile

__all__ = ["Config"]


@dataclass(frozen=True, slots=True)
class Config:
    profile: Profile
    collectors: tuple[CollectorSpec, ...]
    settings: Mapping[str, Settings]  # per collector, the collector's overrides applied
    # docs/spec.md §8: the watched objects and their health rules, in configuration order.
    resources: tuple[Resource, ...] = ()
    history_limit: int = 10  # status.history keeps this many changes; 0: no history
    related_objects: tuple[RelatedObject, ...] = ()  # status.relatedObjects, in this order
    # Looked up on every write: the collectors by name.
    _by_name: Mapping[str, CollectorSpec] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {c.name: c for c in self.collectors})

    @classmethod
    def create(
        cls,
        *,
        profile: Profile = SEED,
        collectors: Sequence[str] | None = None,
        settings: Settings | None = None,
        collector_settings: Mapping[str, Mapping[str, Any]] | None = None,
        resources: Sequence[Resource] = (),
        related_objects: Sequence[RelatedObject] = (),
    ) -> Config:
        """Validate that the names exist in the profile; default: every collector of it.
        `resources` come from `health.load_resources` (validated and compiled there)."""
        names = list(collectors) if collectors is not None else [c.name for c in profile.collectors]
        if not names:
            raise ConfigError("collectors: at least one collector must be configured")
        if len(set(names)) != len(names):
            raise ConfigError(f"collectors: {names} names a collector twice")
        specs = []
        for name in names:
            spec = profile.collector(name)
            if spec is None:
                raise ConfigError(
                    f"collectors: unknown collector {name!r}; known: {_known(profile)}"
                )
            specs.append(spec)
        base = settings or Settings()
        per: dict[str, Settings] = {}
        overrides = dict(collector_settings or {})
        for name, values in overrides.items():
            if "historyLimit" in values:
                raise ConfigError(
                    f"collectorSettings.{name}.historyLimit: the history is the addon's; "
                    "set it in settings"
                )
            if name not in names:
                raise ConfigError(
                    f"collectorSettings: {name!r} is not a configured collector ({names})"
                )
        for name in names:
            try:
                per[name] = base.overridden(dict(overrides.get(name, {})))
            except ValidationError as error:
                raise ConfigError(f"collectorSettings.{name}: {_first(error)}") from error
        for resource in resources:
            if resource.collector is not None and resource.collector not in names:
                raise ConfigError(
                    f"resources ({resource.name}).collector: {resource.collector!r} is not a"
                    f" configured collector ({names})"
                )
        return cls(
            profile=profile,
            collectors=tuple(specs),
            settings=per,
            resources=tuple(resources),
            history_limit=base.history_limit,
            related_objects=merged(_watched(resources), related_objects),
        )

    def with_related(self, *objects: RelatedObject) -> Config:
        """This configuration naming `objects` first (the shell's: the addon CR, the Lease, the
        health rules' objects), then the ones it already names."""
        return replace(self, related_objects=merged(objects, self.related_objects))

    @property
    def primary(self) -> CollectorSpec:
        """The profile's primary collector; if it is not configured, the first configured one."""
        return next((c for c in self.collectors if c.primary), self.collectors[0])

    def spec(self, name: str) -> CollectorSpec | None:
        return self._by_name.get(name)


def _watched(resources: Sequence[Resource]) -> list[RelatedObject]:
    """The objects health rules watch, as related objects (docs/spec.md §9)."""
    return [
        RelatedObject(r.object.group, r.object.plural, r.object.name, r.object.namespace or "")
        for r in resources
    ]


def _known(profile: Profile) -> str:
    return ", ".join(c.name for c in profile.collectors)


def _first(error: ValidationError) -> str:
    detail = error.errors()[0]
    where = ".".join(str(p) for p in detail["loc"])
    return f"{where}: {detail['msg']}" if where else str(detail["msg"])
