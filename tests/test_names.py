"""One place for each name (docs/reference/cli.md): the objects' default names are declared in
statemachines/object_names.py and nowhere else in the code — no module spells one as a string
of its own — and every command that names one defaults to that declaration."""

from __future__ import annotations

import argparse
import io
import tokenize
from pathlib import Path

import pytest

from controller.cli import parser
from controller.flags import given
from controller.hub.options import HubOptions
from controller.spoke.options import RunOptions
from statemachines import object_names
from statemachines.object_names import ADDON_CR, ADDON_NAMESPACE, HUB_SIDE, MANAGED_ADDON
from statemachines.scenario import NAMESPACE

ROOT = Path(__file__).resolve().parents[1]
NAMES = {
    ADDON_CR,
    ADDON_NAMESPACE,
    object_names.ACM_MANAGED_ADDON,
    object_names.SPOKE_LEASE,
    HUB_SIDE,
}  # `addon-status` is also the program's name (user agent, field manager): not looked for


def _strings(path: Path) -> list[str]:
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text("utf-8")).readline)
    return [t.string.strip("\"'") for t in tokens if t.type == tokenize.STRING]


def test_no_module_spells_a_default_name_of_its_own() -> None:
    spelled = {
        f"{path.relative_to(ROOT)}: {text}"
        for package in ("controller", "statemachines")
        for path in (ROOT / package).rglob("*.py")
        if path.name != "object_names.py"
        for text in _strings(path)
        if text in NAMES
    }
    assert spelled == set()


def _defaults(*words: str) -> argparse.Namespace:
    return parser(words[0]).parse_args(list(words))


@pytest.mark.parametrize("words", [("fleet",), ("check", "hub")], ids=["fleet", "check hub"])
def test_the_reading_commands_default_to_the_declared_names(words: tuple[str, ...]) -> None:
    args = _defaults(*words)
    assert (args.addon_name, args.addon_kind) == (MANAGED_ADDON, "ObservabilityAddon")
    assert args.copy_name is None  # the name that goes with --addon-kind (COPY_NAMES)


def test_the_processes_default_to_the_declared_names() -> None:
    run = RunOptions.model_fields
    assert (run["addon_name"].default, run["addon_namespace"].default) == (ADDON_CR, NAMESPACE)
    assert run["lease_name"].default == object_names.SPOKE_LEASE
    hub = HubOptions.model_fields
    assert (hub["addon_name"].default, hub["copy_name"].default) == (MANAGED_ADDON, ADDON_CR)
    assert hub["lease_name"].default == HUB_SIDE
    assert NAMESPACE == ADDON_NAMESPACE  # the scenarios' addon CR is `run`'s


@pytest.mark.parametrize(
    ("words", "field"),
    [(("run",), "addon_name"), (("hub",), "copy_name")],
    ids=["run: the addon CR", "hub: the copies"],
)
def test_the_addon_crs_name_goes_with_its_kind_everywhere(
    words: tuple[str, ...], field: str
) -> None:
    """As `fleet` and `check hub` default `--copy-name`: the own kind's CR is `addon-status`
    (manifests/components/own-kind), ACM's `observability-addon`; a name given stays."""
    model = RunOptions if words == ("run",) else HubOptions
    flags = RunOptions.FLAGS if model is RunOptions else HubOptions.FLAGS
    for given_words, kind, name in [
        ((), "ObservabilityAddon", ADDON_CR),
        (("--addon-kind", "AddonStatus"), "AddonStatus", object_names.OWN_ADDON_CR),
    ]:
        args = _defaults(*words, *given_words)
        options = model.model_validate(given(args, {}, flags))
        assert (options.addon_kind, getattr(options, field)) == (kind, name)
    named = ["--addon-name" if field == "addon_name" else "--copy-name", "mine"]
    args = _defaults(*words, "--addon-kind", "AddonStatus", *named)
    assert getattr(model.model_validate(given(args, {}, flags)), field) == "mine"
    env = {"ADDON_STATUS_ADDON_KIND": "AddonStatus"}  # a variable as a flag
    options = model.model_validate(given(_defaults(*words), env, flags))
    assert getattr(options, field) == object_names.OWN_ADDON_CR
