"""The controller's pod as `addon-status run` sees it: the Deployment's args parsed by `run`'s
own flags, and its environment (literal values, the downward API, the settings ConfigMap)
resolved as the kubelet would, so that tests hold the manifests to the code's options."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

from controller.spoke.options import RunOptions, add_run_flags
from tests.manifests.kustomize import find

__all__ = ["POD_NAME", "flag_value", "options_of", "pod_environment", "run_parser"]

Obj = dict[str, Any]
POD_NAME: Final = "addon-status-controller-5d8c7b9f4-x2k7q"


def run_parser() -> argparse.ArgumentParser:
    """The flags of `run` (the report API's included), as the CLI registers them."""
    parser = argparse.ArgumentParser(prog="addon-status run", add_help=False, exit_on_error=False)
    add_run_flags(parser)
    return parser


def flag_value(container: Mapping[str, Any], flag: str) -> str:
    """The value of `--flag=value` or `--flag value` in the container's args."""
    args = [str(a) for a in container["args"]]
    for index, arg in enumerate(args):
        if arg.startswith(flag + "="):
            return arg.split("=", 1)[1]
        if arg == flag:
            return args[index + 1]
    raise AssertionError(f"{flag} is not in the args")


def pod_environment(objects: Iterable[Obj], deployment: Obj) -> dict[str, str]:
    """The container's environment in a pod of `deployment`: `envFrom` ConfigMaps first, then
    `env` (which wins), downward-API fields filled in."""
    objects = list(objects)
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    fields = {"metadata.name": POD_NAME, "metadata.namespace": deployment["metadata"]["namespace"]}
    environ: dict[str, str] = {}
    for source in container.get("envFrom") or []:
        environ.update(find(objects, "ConfigMap", source["configMapRef"]["name"])["data"])
    for variable in container.get("env") or []:
        if "value" in variable:
            environ[variable["name"]] = str(variable["value"])
        else:
            environ[variable["name"]] = fields[variable["valueFrom"]["fieldRef"]["fieldPath"]]
    return environ


def options_of(objects: Iterable[Obj], deployment: Obj, *, files: Path) -> RunOptions:
    """The RunOptions `run` builds in the pod. Mounted files do not exist here: every path flag
    is pointed at an empty file of the same name under `files`."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    command, *args = [str(a) for a in container["args"]]
    assert command == "run", command
    parsed = run_parser().parse_args(args)
    for name, value in vars(parsed).items():
        if isinstance(value, Path) or (isinstance(value, str) and value.startswith("/")):
            stand_in = files / Path(value).name
            stand_in.touch()
            setattr(parsed, name, stand_in)
    environ = {"KUBERNETES_SERVICE_HOST": "10.0.0.1", **pod_environment(objects, deployment)}
    return RunOptions.from_args(parsed, environ)
