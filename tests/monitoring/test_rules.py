"""The alerting rules as the ecosystem tests its own: `promtool check rules`, and `promtool test
rules` with input series for every alert, firing and not firing; every alert has a severity, a
summary, a description and a runbook section that exists; every metric a rule reads is one the
processes export; the PrometheusRules of the optional components are the rule files."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.exported import exported_names
from tests.monitoring.prometheus import tools
from tests.monitoring.prometheusrules import RULES, RUNBOOK_BASE, main, rebase

ROOT = Path(__file__).resolve().parents[2]
TESTS = sorted((ROOT / "monitoring" / "tests").glob("*.test.yaml"))
RUNBOOK = ROOT / "docs" / "runbook.md"


def _alerts() -> list[dict[str, Any]]:
    return [
        rule
        for path in sorted(RULES.glob("*.rules.yaml"))
        for group in yaml.safe_load(path.read_text("utf-8"))["groups"]
        for rule in group["rules"]
        if "alert" in rule
    ]


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(tools().promtool), *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=ROOT)  # fmt: skip


def test_promtool_checks_every_rule_file() -> None:
    done = _promtool("check", "rules", *map(str, sorted(RULES.glob("*.rules.yaml"))))
    assert done.returncode == 0, done.stdout + done.stderr


def test_promtool_unit_tests_pass() -> None:
    done = _promtool("test", "rules", *map(str, TESTS))
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_alert_is_tested_firing_and_not_firing() -> None:
    evaluations: dict[str, set[bool]] = {}
    for path in TESTS:
        for case in yaml.safe_load(path.read_text("utf-8"))["tests"]:
            for check in case.get("alert_rule_test") or []:
                evaluations.setdefault(check["alertname"], set()).add(bool(check["exp_alerts"]))
    assert {a["alert"]: {True, False} for a in _alerts()} == evaluations


@pytest.mark.parametrize("alert", _alerts(), ids=lambda a: a["alert"])
def test_every_alert_says_how_bad_what_where_and_what_to_do(alert: dict[str, Any]) -> None:
    assert alert["labels"]["severity"] in {"warning", "critical"}
    assert {"summary", "description", "runbook_url"} <= set(alert["annotations"])
    # absolute, so that a notification can open it: the published runbook's section
    base, _, anchor = alert["annotations"]["runbook_url"].partition("#")
    assert base == RUNBOOK_BASE
    headings = re.findall(r"^#+ (\w+)$", RUNBOOK.read_text("utf-8"), flags=re.MULTILINE)
    assert anchor in {h.lower() for h in headings}
    assert anchor == alert["alert"].lower()


def test_the_runbook_base_is_rewritten_and_nothing_else() -> None:
    before = (RULES / "addon-status-spoke.rules.yaml").read_text("utf-8")
    after = rebase(before, "https://wiki.example.org/addon-status/runbook")
    urls = before.count("runbook_url: ")
    assert urls > 0
    assert after.count("runbook_url: https://wiki.example.org/addon-status/runbook#") == urls
    assert after.replace("https://wiki.example.org/addon-status/runbook", RUNBOOK_BASE) == before


@pytest.mark.integration
def test_every_metric_a_rule_reads_is_exported() -> None:
    used = {
        name for alert in _alerts() for name in re.findall(r"\baddon_status_[a-z_]+", alert["expr"])
    }
    assert used - exported_names() == set()


def test_the_prometheus_rules_are_the_rule_files() -> None:
    """Stale when a rule file changed: run `python -m tests.monitoring.prometheusrules`."""
    assert main(["--check"]) == 0


def _entry(alert: str) -> str:
    text = RUNBOOK.read_text("utf-8")
    start = text.index(f"### {alert}\n")
    end = text.find("\n#", start + 4)
    return text[start : end if end != -1 else None]


@pytest.mark.parametrize("alert", [a["alert"] for a in _alerts()], ids=lambda a: a)
def test_every_runbook_entry_names_the_command_that_finds_the_cause(alert: str) -> None:
    look_at = _entry(alert).split("**Look at**:", 1)[1].split("**Do**:", 1)[0]
    assert re.search(r"addon-status (check spoke|check hub|fleet CLUSTER)", look_at), look_at


def test_the_runbooks_namespaces_are_the_ones_the_manifests_install_into() -> None:
    text = RUNBOOK.read_text("utf-8")
    spoke = yaml.safe_load((ROOT / "manifests/ocm/common/addondeploymentconfig.yaml").read_text())
    hub_side = yaml.safe_load(
        (ROOT / "manifests/ocm/common/hub-side/kustomization.yaml").read_text()
    )
    hub_controller = yaml.safe_load(
        (ROOT / "manifests/hub-controller/serviceaccount.yaml").read_text()
    )
    namespaces = {
        "NS": spoke["spec"]["agentInstallNamespace"],
        "HUB_NS": hub_side["namespace"],
        "HUB_NS ": hub_controller["metadata"]["namespace"],
    }
    for name, namespace in namespaces.items():
        assert f"`{name.strip()}`" in text and f"`{namespace}`" in text, (name, namespace)
    # every namespace the runbook types out is one of these (not an agent namespace of OCM's)
    typed = set(re.findall(r"kubectl -n\s+([a-z][-a-z]+)", text))
    assert typed <= set(namespaces.values()), typed


def test_hub_replication_failing_says_what_to_do_for_each_error_kind_the_spoke_counts() -> None:
    do = _entry("AddonStatusHubReplicationFailing").split("**Do**:", 1)[1]
    for kind in ("unauthorized", "forbidden", "not_found", "network"):
        assert f"`{kind}`:" in do, kind
