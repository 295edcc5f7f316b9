"""The repository explains itself, and what it says holds: the README is a front door of at
most 300 lines whose test command is the one CI runs; no file cites a file outside the
repository; every link in the README and docs/ leads somewhere, every anchor into the
specification exists; the docs' code blocks run where they can (scenarios load, configuration
files and grants load, Python compiles, `kubectl apply -k` names a kustomization, `simulate`
commands pass); and every flag of every command is in the CLI reference."""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from controller.cli import COMMANDS, parser
from controller.report_api.auth import Authorizer
from statemachines.config_file import load_configuration
from statemachines.scenario import load

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").rglob("*.md"))
PAGES = [ROOT / "README.md", *DOCS]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _blocks(language: str) -> list[tuple[Path, str]]:
    return [
        (page, body)
        for page in PAGES
        for lang, body in BLOCK.findall(page.read_text())
        if lang == language
    ]


def _id(page: Path) -> str:
    return str(page.relative_to(ROOT))


def test_the_readme_is_a_front_door_of_at_most_300_lines() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 300


def test_the_readmes_test_command_is_the_one_ci_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    venv = "python3 -m venv .venv && .venv/bin/pip install"
    tests = f"{venv} -e '.[test]' && .venv/bin/python -m pytest"
    assert tests in readme and tests in ci
    assert f"{venv} -e . && .venv/bin/addon-status demo" in readme


def _tracked() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [ROOT / name for name in listed if (ROOT / name).is_file()]


def test_no_file_cites_a_file_outside_the_repository() -> None:
    outside = re.compile(
        r"STATUS_SEMANTICS|DESIGN\.md|STYLE\.md|STYLE item|\.\./shared|shared/upstream"
    )
    citing = []
    for path in _tracked():
        if path.suffix in {".png", ".whl"} or path == Path(__file__):
            continue
        text = path.read_text(errors="replace")
        citing += [f"{_id(path)}: {m.group(0)}" for m in outside.finditer(text)]
    assert citing == []


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


@pytest.mark.parametrize("page", PAGES, ids=_id)
def test_every_link_leads_somewhere(page: Path) -> None:
    broken = []
    text = re.sub(r"`[^`\n]*`", "", BLOCK.sub("", page.read_text()))  # links, not code
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(target)
        elif anchor and resolved.suffix == ".md":
            headings = re.findall(r"^#+ (.+)$", resolved.read_text(), re.M)
            if anchor not in {_anchor(h) for h in headings}:
                broken.append(target)
    assert broken == []


@pytest.mark.parametrize("page", [p for p in PAGES if p.name != "spec.md"], ids=_id)
def test_the_rules_are_cited_by_a_link_to_their_section(page: Path) -> None:
    """One way to cite the rules: `[§N](spec.md#...)`, never a bare §N or "section N", so that a
    reader lands on the rule instead of a restatement of it (the anchors are checked above)."""
    text = re.sub(r"`[^`\n]*`", "", BLOCK.sub("", page.read_text()))
    text = re.sub(r"\[§[0-9.]+\]\((?:\.\./|docs/)?spec\.md#[^)]+\)", "", text)
    assert re.findall(r"§[0-9]+|\b[Ss]ection [0-9]+\b", text) == []


# What a reference page may name only with a link to the section that states the rule: the
# rules live in the specification, a reference page points at them rather than restating them.
RULE_WORDS = {
    "2-the-collector-machines": r"\bstate machines?\b",
    "3-flap-dampening": r"\bdampen(?:ing|ed|s)?\b",
    "4-staleness": r"\bstale(?:ness)?\b",
    "5-aggregation": r"\bprecedence\b",
    "7-the-hub-copy": r"\bhub cop(?:y|ies)\b",
    "8-health-rules-on-watched-objects": r"\bhealth rules?\b",
    "9-history-versions-related-objects": r"\bstatus\.history\b|\brelatedObjects\b",
    "10-ready-and-the-last-known-good-generation": r"\blastKnownGood\b|\blast known good\b",
    "11-profiles": r"\bprofiles?\b",
    "12-the-hub-side": r"\bthe hub side\b",
}
REFERENCE = sorted((ROOT / "docs" / "reference").glob("*.md"))


@pytest.mark.parametrize("page", REFERENCE, ids=_id)
def test_a_reference_page_links_the_section_of_each_rule_it_names(page: Path) -> None:
    raw = page.read_text()
    prose = re.sub(r"\[[^\]]*\]\([^)]*\)", "", re.sub(r"`[^`\n]*`", "", BLOCK.sub("", raw)))
    unlinked = [
        section for section, words in RULE_WORDS.items()
        if re.search(words, prose, re.IGNORECASE) and f"spec.md#{section}" not in raw
    ]  # fmt: skip
    assert unlinked == [], f"{page.name} names these rules without linking them: {unlinked}"


@pytest.mark.parametrize(("page", "body"), _blocks("yaml"), ids=lambda x: "")
def test_every_yaml_block_loads_as_what_it_shows(page: Path, body: str) -> None:
    document = yaml.safe_load(body)
    if isinstance(document, dict) and document.get("kind") in ("Kustomization", "Component"):
        # an overlay the page suggests, in a directory of its own under manifests/
        where = ROOT / "manifests" / "an-overlay"
        entries = [*(document.get("resources") or []), *(document.get("components") or [])]
        assert all((where / entry).resolve().exists() for entry in entries), entries
    elif isinstance(document, dict) and "steps" in document:
        load(body, source=_id(page))
    elif isinstance(document, dict) and {"resources", "collectorSettings"} & set(document):
        load_configuration(body, source=_id(page), namespace="addons")
    elif isinstance(document, dict) and "operator" in document:
        path = ROOT / "tests" / ".grants-from-docs.yaml"
        try:
            path.write_text(body)
            Authorizer.load(path)
        finally:
            path.unlink()
    else:
        assert document is not None


@pytest.mark.parametrize(("page", "body"), _blocks("python"), ids=lambda x: "")
def test_every_python_block_compiles(page: Path, body: str) -> None:
    compile(body, _id(page), "exec")


def _commands() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        for written in page.read_text().splitlines():
            line = written.strip().removeprefix(".venv/bin/")
            if re.match(r"^(kubectl .*apply -k |addon-status simulate )", line):
                found.append((page, line))
    return found


def _overlays_written(page: Path) -> set[str]:
    """The overlays a page has the reader write: a Kustomization block whose first line names
    its file (`# manifests/NAME/kustomization.yaml: ...`); its resources are checked above."""
    named = re.compile(r"# (manifests/[\w./-]+)/kustomization\.yaml")
    return {m[1] for lang, body in BLOCK.findall(page.read_text())
            if lang == "yaml" and (m := named.match(body))}  # fmt: skip


@pytest.mark.parametrize(("page", "command"), _commands(), ids=lambda x: "")
def test_every_command_the_docs_give_runs_where_it_can(page: Path, command: str) -> None:
    words = command.split("#", maxsplit=1)[0].split()
    if words[0] == "kubectl":
        named = words[words.index("-k") + 1]
        own = named in _overlays_written(page)  # the page shows the reader's own
        assert own or (ROOT / named / "kustomization.yaml").is_file(), command
        return
    done = subprocess.run(
        [sys.executable, "-m", "controller.cli", *words[1:]],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, f"{_id(page)}: {command}\n{done.stderr}"


# A command line of the project's own in a page's command block (indented or fenced): the line
# starts with it, or runs it after `&&` or `--` (`kubectl exec ... -- addon-status ...`); a
# synopsis (`[--flag]`) or a caption (`addon-status hub, idle ...`) is not a command.
_SUBCOMMAND = "|".join(COMMANDS)
CLI_LINE = re.compile(
    rf"(?:^|&& |-- )(?:\.venv/bin/)?addon-status ((?:{_SUBCOMMAND})(?: [^#`\[(),]*)?)$"
)


def _cli_commands() -> list[tuple[Path, str]]:
    found = []
    for page in PAGES:
        for lang, body in BLOCK.findall(page.read_text()):
            if lang in ("", "sh", "shell", "console"):
                found += [(page, line.strip()) for line in body.splitlines()]
        found += [(page, line[4:].strip()) for line in page.read_text().splitlines()
                  if line.startswith("    ")]  # fmt: skip
    commands = []
    for page, line in found:
        if "[" not in line and (match := CLI_LINE.search(line.split("  #")[0].strip())):
            commands.append((page, match[1].strip()))
    return sorted(set(commands))


@pytest.mark.parametrize(("page", "command"), _cli_commands(), ids=lambda x: "")
def test_every_addon_status_command_the_docs_give_parses(page: Path, command: str) -> None:
    """Each one is read by the real parser, its flags and values as the page writes them
    (placeholders such as HUB_KUBECONFIG are values like any other): a flag renamed or removed
    fails here. Those that need no cluster run too (`simulate` above, `completion`)."""
    words = shlex.split(command)
    try:
        parser(words[0]).parse_args(words)
    except SystemExit as refused:  # `--help` exits 0
        assert refused.code == 0, f"{_id(page)}: addon-status {command}"
    if words[0] == "completion":
        done = subprocess.run(
            [sys.executable, "-m", "controller.cli", *words],
            cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0 and done.stdout, f"{_id(page)}: {command}\n{done.stderr}"


def _inline_flags() -> list[tuple[Path, str, str]]:
    """(page, command, flag) of each flag written after `addon-status COMMAND` in a page's text:
    `addon-status report --url URL --reason ...`, whole or in part."""
    found = []
    for page in PAGES:
        text = BLOCK.sub("", page.read_text())
        for command, rest in re.findall(rf"`addon-status ({_SUBCOMMAND})\b([^`]*)`", text):
            found += [(page, command, flag) for flag in re.findall(r"(?<!\S)(--[a-z-]+)", rest)]
    return sorted(set(found))


@pytest.mark.parametrize(("page", "command", "flag"), _inline_flags(), ids=lambda x: "")
def test_every_flag_the_docs_write_after_a_command_is_one_of_its_flags(
    page: Path, command: str, flag: str
) -> None:
    assert flag in _flags(command) | {"--help"}, f"{_id(page)}: addon-status {command} {flag}"


def _flags(command: str) -> set[str]:
    sub = parser(command)._subparsers
    assert sub is not None
    found: set[str] = set()
    for action in sub._group_actions:
        assert isinstance(action, argparse._SubParsersAction)
        found |= _long_options(action.choices[command])
    return {f for f in found if not f.startswith("--no-")}


def _long_options(command: argparse.ArgumentParser) -> set[str]:
    """Its long options and those of its own subcommands (`check spoke|hub`)."""
    found: set[str] = set()
    for option in command._actions:
        if isinstance(option, argparse._SubParsersAction):
            found |= {f for each in option.choices.values() for f in _long_options(each)}
        found |= {s for s in option.option_strings if s.startswith("--") and s != "--help"}
    return found


@pytest.mark.parametrize("command", ["run", "hub", "report", "fleet", "simulate", "demo"])
def test_every_flag_is_in_the_cli_reference(command: str) -> None:
    reference = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert {f for f in _flags(command) if f"`{f}" not in reference} == set()


BENCH_README = ROOT / "tests" / "bench" / "README.md"
SCRIPT = re.compile(r"^\s*\.venv/bin/python (tests/bench/\w+\.py)", re.M)


@pytest.mark.parametrize(
    "script", sorted(set(SCRIPT.findall(BENCH_README.read_text()))), ids=lambda s: s
)
def test_every_benchmark_the_bench_readme_gives_starts_as_written(script: str) -> None:
    """Run as the README says (from the root, the script's path, not `-m`): it imports and
    parses its flags; `test_bench_smoke.py` runs the figures themselves."""
    done = subprocess.run(
        [sys.executable, script, "--help"],
        cwd=ROOT, capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, f"{script}\n{done.stderr}"
