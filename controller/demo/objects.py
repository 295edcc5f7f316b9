"""The watched objects of a scenario on the demo's spoke API server (docs/spec.md §8): a step's
`object` written straight to storage as the scenario gives it, or deleted; the controller's
health watches see the change like any other."""

from __future__ import annotations

from controller.demo.scenario_file import ObjectChange
from kubesim import APIServer
from statemachines.config_file import guess_plural
from statemachines.errors import AddonStatusError

__all__ = ["change_object"]


def change_object(server: APIServer, change: ObjectChange) -> str | None:
    """The object as its own controller would have left it (its `metadata.generation` and
    `status` included), or gone; the resourceVersion the watch will deliver, None when nothing
    changed (deleting an object that does not exist)."""
    group, _, version = change.api_version.rpartition("/")
    plural = guess_plural(change.kind)
    try:
        if change.value is None:
            if not server.delete_object(group, version, plural, change.namespace, change.name):
                return None
            return server.resource_version
        stored = server.put_object(group, version, plural, change.value)
    except KeyError as error:
        raise AddonStatusError(
            f"{change.api_version} {change.kind} is not served by the embedded spoke;"
            " give its CRD with --crd"
        ) from error
    return str(stored["metadata"]["resourceVersion"])
