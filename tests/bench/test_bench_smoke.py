"""The benchmarks still run and still measure what they claim: each script runs as a user runs
it, with tiny sizes, and its printed figures must parse and hold together — exactly one spoke
write per visible change and none for reports that change nothing, no more hub writes than
spoke writes, dampening writing less to the hub than no dampening over the same signal, the
simulation agreeing with the measured run on what they share. No timing is asserted: speed is
what the benchmarks print, not what the tests check.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parents[1]
FLEET_ARGS = ["--clusters", "3", "--minutes", "30", "--speed", "1200", "--seed", "4"]
FLEET_CONDITIONS = [*FLEET_ARGS, "--hub-copy", "conditions"]


def run(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=90,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, f"{script} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def rows(output: str) -> dict[str, list[float]]:
    """`  label:   1.0   2.0 ...` lines whose cells are all numbers."""
    found: dict[str, list[float]] = {}
    for line in output.splitlines():
        label, sep, cells = line.strip().rpartition(":")
        values = cells.split()
        if sep and values and all(re.fullmatch(r"-?\d+(\.\d+)?", v) for v in values):
            found[label] = [float(v) for v in values]
    return found


def said(output: str, claim: str) -> bool:
    return f"{claim}: True" in output


def test_e2e_writes_each_change_once_and_the_hub_no_more_often() -> None:
    output = run("e2e.py", "--reports", "60", "--runs", "1")
    figures = rows(output)
    median = {label: values[0] for label, values in figures.items()}
    assert all(values[0] == values[1] for values in figures.values()), "one run: its median"
    assert median["spoke status writes per visible change (goal 1)"] == 1.0
    assert median["spoke writes for reports changing nothing (goal 0)"] == 0.0
    assert 0 < median["hub writes per visible change (goal <= spoke's)"] <= 1.0
    assert median["reports judged per second"] >= median["accepted reports per second"] > 0
    for where in ("spoke status written", "hub copy written"):
        p50, p99 = median[f"report -> {where}, p50 ms"], median[f"report -> {where}, p99 ms"]
        assert 0 < p50 <= p99
    for claim in (
        "written statuses equal the core's, in order",
        "hub copy showed every change of the conditions",
        "hub copy holds the spoke's final conditions",
    ):
        assert said(output, claim), claim


@pytest.fixture(scope="module")
def fleet() -> tuple[str, str]:
    """The measured run and the simulation of the same small fleet and signal."""
    return run("fleet.py", *FLEET_CONDITIONS), run("fleet.py", *FLEET_CONDITIONS, "--simulate-only")


def test_fleet_writes_less_to_the_hub_with_dampening(fleet: tuple[str, str]) -> None:
    measured = rows(fleet[0])
    damped, raw, ratio = measured["hub writes (measured on the hub)"]
    visible = measured["hub-visible changes (conditions)"]
    assert 0 < damped < raw
    assert ratio == pytest.approx(raw / damped, rel=0.05)
    assert damped <= visible[0] and raw <= visible[1], "coalescing only ever lowers the writes"


def test_fleet_simulation_agrees_with_the_measured_run(fleet: tuple[str, str]) -> None:
    measured, simulated = rows(fleet[0]), rows(fleet[1])
    for shared in ("spoke status changes", "hub-visible changes (conditions)"):
        assert measured[shared] == simulated[shared], shared
    assert simulated["hub writes (simulated)"] == simulated["hub-visible changes (conditions)"]


def test_fleet_checks_every_hub_copy_and_has_no_hub_errors(fleet: tuple[str, str]) -> None:
    assert said(fleet[0], "every hub copy equals its spoke's final conditions")
    errors = next(line for line in fleet[0].splitlines() if "hub errors:" in line)
    assert errors.split(":", 1)[1].split() == ["0", "0"]


def test_events_creates_fewer_events_than_moves_and_sends_each_once() -> None:
    figures = rows(run("events.py", "--reports", "200"))
    without = figures["Events created per report, without correlation"][0]
    created = figures["Events created per report, correlated"][0]
    patched = figures["Event patches per report, correlated"][0]
    assert 0 < created < without
    assert created + patched == pytest.approx(without, abs=0.001)


def test_fleet_view_lists_every_copy_a_page_at_a_time() -> None:
    output = run("fleet_view.py", "--clusters", "40", "--runs", "2")
    figures = rows(output)
    assert figures["rows listed"] == [40.0]
    assert figures["list calls per view"] == [1.0]
    assert said(output, "one list call per page of 500")
    assert len(figures["wall s"]) == 4 and len(figures["peak RSS MiB"]) == 4
    for view in ("view table", "view json"):
        total = figures[f"{view} ms"]
        assert len(total) == 2 and all(t > 0 for t in total)
        assert min(total) <= figures[f"{view} ms, median"][0] <= max(total)


def test_health_rules_bench_measures_the_chosen_libraries_and_every_rule_kind() -> None:
    output = run("health_rules.py", "--number", "20", "--repeat", "1")
    figures = rows(output)
    for claim in (
        "filter, all, exists, has() as CEL says",
        "misspelt function caught when compiling",
        "filter finds the condition",
        "missing key finds nothing",
    ):
        assert said(output, claim), claim
    assert "cel-expr-python (0.1.3" in output and "python-jsonpath (2.2" in output
    assert "missing field: error" in output
    assert "5000 configured; the CRD keeps at most 64" in output
    for kind in ("alwaysHealthy", "singleConditionType", "multiMatch", "cel"):
        evaluations, observations = figures[f"{kind}, per second"]
        assert evaluations > 0 and observations > 0


def test_profiles_bench_prints_writes_per_report_and_acm_keeps_windows_off_the_cr() -> None:
    out = run("profiles.py", "--rounds", "2")
    table = {
        (parts[0], parts[1]): (float(parts[2]), float(parts[3]))
        for line in out.splitlines()
        if len(parts := line.split()) == 4 and parts[0] in ("seed", "acm")
    }
    assert table[("seed", "heartbeat")] == table[("acm", "heartbeat")] == (0.0, 0.0)
    assert table[("acm", "window")] == (0.0, 1.0)  # a window is bookkeeping: the CR is untouched
    assert table[("seed", "window")] == (1.0, 0.0)


def test_startup_times_every_command_and_the_bare_interpreter() -> None:
    figures = rows(run("startup.py", "--runs", "1"))
    for label in (
        "addon-status --help",
        "addon-status report --help",
        "addon-status simulate STORY",
        "python -c pass (the interpreter alone)",
    ):
        median, fastest, slowest, cpu, rss = figures[label]
        assert 0 < fastest <= median <= slowest and cpu > 0 and rss > 0, label


def test_footprint_measures_an_idle_run_and_hub_what_holds_memory_and_who_wakes() -> None:
    output = run("footprint.py", "--runs", "1", "--idle", "3", "--settle", "0.5", "--clusters", "2")
    figures = rows(output)
    assert figures["start-up to ready, s"][0] > 0
    assert figures["CPU s per idle hour (over 3 s)"][0] >= 0
    assert figures["API requests per idle hour"][0] > 0, "the leader renews its Lease"
    interpreter = figures["the interpreter"][1]
    imports = figures["the rest of run's modules"][1]
    assert 0 < interpreter < imports <= figures["RSS when idle, MiB"][0]
    assert figures["hub: CPU s per idle hour (over 3 s)"][0] >= 0
    run_threads, hub_threads = output.split("of the idle hub")
    for threads, what in ((run_threads, "run"), (hub_threads, "hub")):
        assert "  leader-election:" in threads, f"each {what} thread is named after its part"
        assert figures[f"every thread of {what}"][0] > 0, "the Lease is renewed, a real deadline"


def test_fleet_status_copy_saves_hub_writes_with_dampening_too() -> None:
    """`--hub-copy status` copies history and versions but never the windows (docs/spec.md §9)."""
    figures = rows(run("fleet.py", *FLEET_ARGS, "--simulate-only", "--hub-copy", "status"))
    damped, raw, _ = figures["hub writes (simulated)"]
    assert 0 < damped < raw


def test_front_door_measures_every_server_and_each_refuses_the_attacks() -> None:
    output = run("front_door.py", "--reports", "20", "--bursts", "5", "--held", "5")
    figures = rows(output)
    for variant in ("stdlib", "stdlib-before", "uvicorn"):
        p50, p99 = figures[f"{variant} round trip p50 p99 ms"]
        assert 0 < p50 <= p99
        assert figures[f"{variant} burst of 5, answered and p99 ms"][0] == 5
        assert figures[f"{variant} rss at start MiB"][0] > 0
    for variant in ("stdlib", "uvicorn"):
        for attack in ("two Content-Lengths (46, 0)", "Content-Length 0xB2", "bare CR in a header"):
            assert figures[f"{variant} {attack}, answer"] == [400.0], (variant, attack)


def test_object_changes_write_each_change_of_the_result_once_and_nothing_else() -> None:
    figures = rows(run("object_changes.py", "--changes", "6", "--runs", "1"))
    assert figures["spoke writes per change of the result (goal 1)"] == [1.0, 1.0]
    assert figures["spoke writes per change keeping the result (goal 0)"] == [0.0, 0.0]


def test_churn_answers_every_report_while_a_large_object_changes() -> None:
    out = run("churn.py", "--items", "500", "--rate", "5", "--seconds", "2")
    table = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:]}
    assert set(table) == {"multiMatch", "cel"}, out
    for rule, cells in table.items():
        answered, failed, changes, writes = (int(c) for c in cells[3:7])
        assert answered > 0 and failed == 0, (rule, out)
        assert changes > 0 and writes > 0, "the object's changes reached the CR"


def test_realistic_copies_are_what_the_core_writes_and_the_crds_keep() -> None:
    """tests/bench/realistic.py: a copy carries the seed profile's conditions, a full history,
    versions, related objects and the two resources (~8 KB); one in a hundred is near the
    budget at the CRD's largest lists; the phases change what they claim; the API server (the
    hub's CRDs, validation and pruning) keeps every copy and ManagedClusterAddOn unchanged."""
    from controller.hub.mirror import MANAGED_CLUSTER_ADDON as MCA
    from controller.spoke.addon import GROUP, PLURAL, VERSION
    from statemachines.size import BUDGET, encoded_size
    from tests.bench import realistic
    from tests.hub.hubside import ADDON, COPY, hub_server

    regular, big = realistic.lives(0).copy("first"), realistic.lives(99).copy("first")
    assert {c["type"] for c in regular["conditions"]} == {
        "Available", "Degraded", "Progressing", "Disabled", "NotSupported", "Ready",
        "MetricsCollectorStatus", "UwlMetricsCollectorStatus", "ResourcesHealthy",
    }  # fmt: skip
    assert "collectors" not in regular, "bookkeeping never reaches the hub"
    assert len(regular["history"]) == 10 and len(regular["versions"]) == 2
    assert len(regular["relatedObjects"]) == 4 and len(regular["resources"]) == 2
    assert 6_000 < len(json.dumps(regular, separators=(",", ":"))) < 10_000
    assert len(big["history"]) == 1000 and len(big["resources"]) == 64
    assert len(big["relatedObjects"]) == 256
    assert 0.8 * BUDGET < encoded_size(big) <= BUDGET
    for index in (0, 1, 99):
        phases = [realistic.mirrored(realistic.lives(index).copy(p)) for p in realistic.PHASES]
        assert phases[0] != phases[1] == phases[2] != phases[3], index
    with hub_server() as hub:
        for index, status in ((0, regular), (99, big)):
            cluster = f"cluster{index:05d}"
            hub.cluster(cluster, addon=False)
            hub.custom.patch_namespaced_custom_object_status(
                GROUP, VERSION, cluster, PLURAL, COPY, {"status": status}
            )
            stored = hub.custom.get_namespaced_custom_object(GROUP, VERSION, cluster, PLURAL, COPY)
            assert stored["status"] == status
            addon = realistic.managed_cluster_addon(cluster, ADDON, index)
            hub.custom.create_namespaced_custom_object(
                MCA.group, MCA.version, cluster, MCA.plural, {**addon, "status": {}}
            )
            hub.custom.patch_namespaced_custom_object_status(
                MCA.group, MCA.version, cluster, MCA.plural, ADDON, {"status": addon["status"]}
            )
            stored = hub.addon(cluster)
            assert stored["status"] == addon["status"]
            assert {k: stored["metadata"][k] for k in ("labels", "annotations", "finalizers")} == {
                k: addon["metadata"][k] for k in ("labels", "annotations", "finalizers")
            }


def test_realistic_describes_its_copies() -> None:
    figures = rows(run("realistic.py", "300"))
    assert 6_000 < figures["copy bytes, median"][0] < 10_000
    assert len(figures["near the budget, bytes as sent and as the client counts"]) == 2
    assert figures["ManagedClusterAddOn bytes"][0] > 2_000


def test_core_prints_microseconds_per_report_for_each_verdict_it_sent() -> None:
    output = run("core.py", "--reports", "200", "--runs", "1")
    figures = rows(output)
    per_verdict = {label: v for label, v in figures.items() if "us per report" in label}
    assert per_verdict and all(v[0] > 0 for v in per_verdict.values()), output
