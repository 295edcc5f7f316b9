"""The image's Dockerfile, read with the `dockerfile` package (Docker's own parser, buildkit's Go
code): the build stage installs the project from its sources with pip (pyproject.toml, the
README its metadata names, every package setuptools finds), on the Python that
`requires-python` asks for; the runtime stage takes only what pip installed, runs as a numeric
non-root USER (so the kubelet can check runAsNonRoot), writes no bytecode (its root is
read-only), EXPOSEs exactly the controller's default ports, and starts the project's console
script in exec form under an init, Debian's `tini` (SIGTERM reaches the controller through it,
so the Lease is released, and it reaps what an exec credential plugin leaves behind), with
`run` by default.

`docker build` is not run: these machines have no Docker daemon and no access to the base
image's registry. The image is built by `docker build -t addon-status:0.2.0 .` where there is.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from typing import Any, Final

import dockerfile
import pytest

from controller.spoke.options import Address, RunOptions
from tests.manifests.kustomize import MANIFESTS, ROOT, build, find

PROJECT: Final = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
Stage = list[Any]  # the instructions of one stage, its FROM first
INIT: Final = "/usr/bin/tini"  # Debian's tini package


def stages() -> list[Stage]:
    found: list[Stage] = []
    for command in dockerfile.parse_file(str(ROOT / "Dockerfile")):
        if command.cmd == "FROM":
            found.append([])
        assert found, f"line {command.start_line}: {command.cmd} before the first FROM"
        found[-1].append(command)
    return found


def instructions(stage: Stage, name: str) -> list[Any]:
    return [c for c in stage if c.cmd == name]


def env(stage: Stage) -> dict[str, str]:
    values: dict[str, str] = {}
    for command in instructions(stage, "ENV"):
        pairs: Sequence[str] = command.value
        values.update(zip(pairs[::2], pairs[1::2], strict=True))
    return values


def test_two_stages_on_the_python_the_project_requires() -> None:
    build_stage, runtime = stages()
    lowest = PROJECT["project"]["requires-python"].removeprefix(">=")
    for stage in (build_stage, runtime):
        image, _, tag = stage[0].value[0].partition(":")
        assert image == "python"
        assert tag.startswith(f"{lowest}-slim"), tag


def test_the_build_stage_installs_the_project_from_its_sources() -> None:
    build_stage, _ = stages()
    copied = set()
    for command in instructions(build_stage, "COPY"):
        *sources, _ = command.value
        for source in sources:
            assert (ROOT / source).exists(), source
            copied.add(source)
    packages = {p.rstrip("*") for p in PROJECT["tool"]["setuptools"]["packages"]["find"]["include"]}
    assert {"pyproject.toml", PROJECT["project"]["readme"], *packages} <= copied
    [install] = [c for c in instructions(build_stage, "RUN") if c.value[0].startswith("pip ")]
    words = install.value[0].split()
    assert words[:2] == ["pip", "install"] and words[-1] == "."


def test_the_runtime_stage_takes_only_what_pip_installed_and_the_init() -> None:
    _, runtime = stages()
    copies = instructions(runtime, "COPY")
    assert [c.flags for c in copies] == [("--from=build",)] * 2
    assert sorted(tuple(c.value) for c in copies) == [("/install", "/usr/local"), (INIT, INIT)]
    assert not instructions(runtime, "RUN")


def test_the_init_is_debians_tini_installed_in_the_build_stage() -> None:
    """A process that is PID 1 must reap the children orphaned under it (an exec credential
    plugin's, a shell's) and pass signals on; Python does neither. tini does both (Docker's
    `--init` is tini too)."""
    build_stage, _ = stages()
    installs = [c.value[0] for c in instructions(build_stage, "RUN") if "apt-get" in c.value[0]]
    [apt] = installs
    assert "apt-get install" in apt and " tini" in apt and "--no-install-recommends" in apt
    assert "rm -rf /var/lib/apt/lists" in apt  # no package index in the layer


def test_it_runs_as_a_numeric_non_root_user() -> None:
    _, runtime = stages()
    user = instructions(runtime, "USER")[-1].value[0]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) != 0, user
    assert gid == "" or (gid.isdigit() and int(gid) != 0), user


def test_no_bytecode_is_written_at_run_time() -> None:
    _, runtime = stages()
    assert env(runtime)["PYTHONDONTWRITEBYTECODE"] == "1"


def test_expose_lists_the_controllers_default_ports_and_the_deployments() -> None:
    _, runtime = stages()
    exposed = {int(p.split("/")[0]) for c in instructions(runtime, "EXPOSE") for p in c.value}
    defaults = RunOptions()
    ours = {
        defaults.metrics_address.port,
        defaults.probe_address.port,
        Address.parse(defaults.report_address).port,
    }
    assert exposed == ours
    deployment = find(build(MANIFESTS / "base").objects, "Deployment")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert {p["containerPort"] for p in container["ports"]} == exposed


@pytest.mark.parametrize(("name", "expected"), [("ENTRYPOINT", None), ("CMD", ["run"])])
def test_the_console_script_under_the_init_in_exec_form(
    name: str, expected: list[str] | None
) -> None:
    _, runtime = stages()
    [command] = instructions(runtime, name)
    assert command.json, f"{name} in shell form: SIGTERM would go to /bin/sh"
    script, *_ = PROJECT["project"]["scripts"]
    assert list(command.value) == (expected or [INIT, "--", script])


def test_no_manifest_replaces_the_entrypoint() -> None:
    """A container's `command` replaces the image's ENTRYPOINT, init included: the manifests
    give `args` only."""
    for path in MANIFESTS.rglob("*.yaml"):
        assert "command:" not in path.read_text(encoding="utf-8"), path
