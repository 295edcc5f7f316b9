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

__all__ = [
    "POD_NAME", "flag_value", "mounted", "options_of", "pod_args", "pod_environment", "run_parser"
]  # fmt: skip

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


def mounted(
    objects: Iterable[Obj], deployment: Obj, root: Path, secrets: Mapping[str, Mapping[str, bytes]]
) -> dict[str, Path]:
    """The pod's volumes as the kubelet mounts them: each ConfigMap's (from `objects`) or
    Secret's (from `secrets`, by name) keys as files, only its `items` when it lists them, under
    `root/<volume>`; returns each mount path -> that directory."""
    objects = list(objects)
    directories: dict[str, Path] = {}
    pod = deployment["spec"]["template"]["spec"]
    for volume in pod.get("volumes") or []:
        directory = root / volume["name"]
        directory.mkdir(parents=True, exist_ok=True)
        if "configMap" in volume:
            data = {
                k: v.encode()
                for k, v in find(objects, "ConfigMap", volume["configMap"]["name"])["data"].items()
            }
            items = volume["configMap"].get("items")
        elif "secret" in volume:
            data = dict(secrets[volume["secret"]["secretName"]])
            items = volume["secret"].get("items")
        else:
            continue  # emptyDir
        for item in items or [{"key": k, "path": k} for k in data]:
            (directory / item["path"]).write_bytes(data[item["key"]])
    [container] = pod["containers"]
    for mount in container.get("volumeMounts") or []:
        directories[mount["mountPath"]] = root / mount["name"]
    return directories


def pod_args(deployment: Obj, mounts: Mapping[str, Path]) -> list[str]:
    """The container's args, every path under a mount pointed at its local directory."""
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    args = []
    for given in (str(a) for a in container["args"]):
        flag, sep, value = given.partition("=")
        local = [
            f"{flag}={directory}{value[len(mount_path) :]}"
            for mount_path, directory in mounts.items()
            if sep and value.startswith(mount_path + "/")
        ]
        args.append(local[0] if local else given)
    return args
