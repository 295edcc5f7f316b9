"""The Grafana dashboards of monitoring/dashboards: well-formed (a data source chosen at
import, unique panel ids, places that do not overlap, one query per target), every query valid
PromQL (promtool parses it as a recording rule), every metric a query reads exported by the
processes, and the files the generator's output."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.monitoring.dashboards import DASHBOARDS, DIRECTORY, main
from tests.monitoring.exported import exported_names
from tests.monitoring.prometheus import tools

FILES = [DIRECTORY / name for name in sorted(DASHBOARDS)]


def _load(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return document


def queries(path: Path) -> list[str]:
    """Every query of the dashboard, its variables given a value that matches anything."""
    return [
        target["expr"].replace("$namespace", ".*").replace("$cluster", ".*")
        for panel in _load(path)["panels"]
        for target in panel["targets"]
    ]


def test_the_dashboards_are_the_generators_output() -> None:
    assert main(["--check"]) == 0


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_dashboard_is_well_formed(path: Path) -> None:
    board = _load(path)
    assert board["title"] and board["uid"] and board["panels"]
    variables = {v["name"]: v for v in board["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    ids = [panel["id"] for panel in board["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for panel in board["panels"]:
        assert panel["datasource"]["uid"] == "${datasource}"
        place = panel["gridPos"]
        covered = {(x, y) for x in range(place["x"], place["x"] + place["w"])
                   for y in range(place["y"], place["y"] + place["h"])}  # fmt: skip
        assert not covered & cells, f"panel {panel['title']} overlaps another"
        cells |= covered
        refs = [t["refId"] for t in panel["targets"]]
        assert refs and len(refs) == len(set(refs)) and all(t["expr"] for t in panel["targets"])
        used = set(re.findall(r"\$(\w+)", json.dumps(panel["targets"])))
        assert used <= set(variables), f"{panel['title']} uses an undefined variable"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_query_is_promql(path: Path, tmp_path: Path) -> None:
    rules = {"groups": [{"name": "dashboard", "rules": [
        {"record": f"dashboard:query_{n}", "expr": expr} for n, expr in enumerate(queries(path))
    ]}]}  # fmt: skip
    file = tmp_path / "queries.yaml"
    file.write_text(yaml.safe_dump(rules), encoding="utf-8")
    done = subprocess.run([str(tools().promtool), "check", "rules", str(file)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.integration
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_metric_a_query_reads_is_exported(path: Path) -> None:
    used = {name for expr in queries(path) for name in re.findall(r"\baddon_status_[a-z_]+", expr)}
    assert used - exported_names() == set()
