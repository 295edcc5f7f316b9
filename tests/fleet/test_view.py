"""The fleet view's pure logic (controller.fleet.view) on plain dicts: a row per hub copy (the
True standard type of either profile, its reason, transition time and message, Ready and the
installed version when copied), the filters, the summary, the age column and the JSON shape."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import yaml

from controller.fleet.view import (
    SCHEMA,
    UNKNOWN,
    Filters,
    Output,
    Row,
    age,
    as_json,
    as_table,
    render,
    row_of,
    rows_of,
    summarise,
    summary_line,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
TYPES = ("Available", "Progressing", "Degraded", "Disabled", "NotSupported")


def at(minutes_ago: float) -> str:
    return (NOW - timedelta(minutes=minutes_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def hub_copy(
    cluster: str,
    state: str | None = "Available",
    *,
    reason: str = "ForwardSuccessful",
    minutes_ago: float = 90,
    message: str = "MetricsCollector: metrics sent",
    types: tuple[str, ...] = TYPES,
    extra: list[dict[str, Any]] | None = None,
    versions: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    conditions = [
        {"type": t, "status": "True" if t == state else "False",
         "reason": reason if t == state else "AsExpected",
         "message": message if t == state else "", "lastTransitionTime": at(minutes_ago)}
        for t in types
    ]  # fmt: skip
    status: dict[str, Any] = {"conditions": conditions + (extra or [])}
    if versions is not None:
        status["versions"] = versions
    return {"metadata": {"namespace": cluster, "name": "observability-controller"},
            "status": status}  # fmt: skip


def test_row_is_the_true_standard_type_with_its_reason_time_and_message() -> None:
    row = row_of(hub_copy("c1", "Degraded", reason="ForwardFailure", minutes_ago=5,
                          message="UwlMetricsCollector: remote write 503"))  # fmt: skip
    assert (row.cluster, row.name, row.state, row.reason) == (
        "c1", "observability-controller", "Degraded", "ForwardFailure")  # fmt: skip
    assert row.since == NOW - timedelta(minutes=5)
    assert row.message == "UwlMetricsCollector: remote write 503"


def test_row_reads_the_acm_profile_s_three_types() -> None:
    acm = hub_copy("c1", "Degraded", reason="Disabled", types=("Available", "Progressing",
                                                                 "Degraded"))  # fmt: skip
    assert (row_of(acm).state, row_of(acm).reason) == ("Degraded", "Disabled")


def test_row_ignores_other_writers_conditions() -> None:
    other = {"type": "Healthy", "status": "True", "reason": "Fine", "message": "",
             "lastTransitionTime": at(1)}  # fmt: skip
    row = row_of(hub_copy("c1", "Progressing", reason="UpdateSuccessful", extra=[other]))
    assert row.state == "Progressing"


def test_row_without_a_true_standard_type_is_unknown() -> None:
    row = row_of({"metadata": {"namespace": "c1", "name": "a"}})
    assert (row.state, row.reason, row.since, row.ready, row.version) == (
        UNKNOWN, None, None, None, None)  # fmt: skip


def test_row_with_two_true_types_takes_the_first_and_says_so() -> None:
    copy = hub_copy("c1", "Available")
    copy["status"]["conditions"][2]["status"] = "True"  # Degraded too: a broken copy
    row = row_of(copy)
    assert row.state == "Available" and row.message.startswith("(also True: Degraded)")


def test_row_copies_ready_when_the_hub_copy_has_it() -> None:
    ready = {"type": "Ready", "status": "False", "reason": "OutdatedGeneration", "message": "",
             "lastTransitionTime": at(1)}  # fmt: skip
    assert row_of(hub_copy("c1", extra=[ready])).ready == "False"
    assert row_of(hub_copy("c1")).ready is None


@pytest.mark.parametrize(
    ("versions", "shown"),
    [
        pytest.param(None, None, id="no-versions-copied"),
        pytest.param([{"name": "metrics-collector", "version": "2.14.0"},
                      {"name": "uwl-metrics-collector", "version": "2.14.0"}], "2.14.0",
                     id="one-version-for-all-collectors"),
        pytest.param([{"name": "uwl-metrics-collector", "version": "2.15.0"},
                      {"name": "metrics-collector", "version": "2.14.0"}],
                     "metrics-collector=2.14.0,uwl-metrics-collector=2.15.0",
                     id="collectors-at-different-versions"),
    ],
)  # fmt: skip
def test_row_shows_the_installed_version(
    versions: list[dict[str, str]] | None, shown: str | None
) -> None:
    assert row_of(hub_copy("c1", versions=versions)).version == shown


def test_row_with_a_garbled_transition_time_has_no_since() -> None:
    copy = hub_copy("c1")
    copy["status"]["conditions"][0]["lastTransitionTime"] = "yesterday"
    assert row_of(copy).since is None


def test_rows_are_sorted_by_cluster() -> None:
    rows = rows_of([hub_copy("b"), hub_copy("c"), hub_copy("a")])
    assert [r.cluster for r in rows] == ["a", "b", "c"]


FLEET = [
    hub_copy("prod-1"),
    hub_copy("prod-2", "Degraded", reason="ForwardFailure", minutes_ago=30),
    hub_copy("prod-3", "Degraded", reason="UpdateFailure", minutes_ago=200),
    hub_copy("test-1", "Progressing", reason="UpdateSuccessful", minutes_ago=2),
    {"metadata": {"namespace": "test-2", "name": "observability-controller"}},
]


@pytest.mark.parametrize(
    ("filters", "clusters"),
    [
        pytest.param(Filters(), ["prod-1", "prod-2", "prod-3", "test-1", "test-2"], id="none"),
        pytest.param(Filters(states=frozenset({"Degraded"})), ["prod-2", "prod-3"], id="state"),
        pytest.param(Filters(excluded=frozenset({"Available"})),
                     ["prod-2", "prod-3", "test-1", "test-2"], id="not-available"),
        pytest.param(Filters(clusters=("test-*",)), ["test-1", "test-2"], id="cluster-glob"),
        pytest.param(Filters(clusters=("prod-[12]", "test-1")), ["prod-1", "prod-2", "test-1"],
                     id="cluster-globs-are-ored"),
        pytest.param(Filters(excluded=frozenset({"Available"}), clusters=("prod-*",)),
                     ["prod-2", "prod-3"], id="filters-are-anded"),
        pytest.param(Filters(states=frozenset({UNKNOWN})), ["test-2"], id="unknown-state"),
    ],
)  # fmt: skip
def test_filters_choose_rows(filters: Filters, clusters: list[str]) -> None:
    assert [r.cluster for r in filters.apply(rows_of(FLEET))] == clusters


def test_summary_counts_clusters_per_state_in_vocabulary_order() -> None:
    summary = summarise(rows_of(FLEET), NOW)
    assert summary.clusters == 5
    assert list(summary.states.items()) == [
        ("Available", 1), ("Degraded", 2), ("Progressing", 1), (UNKNOWN, 1)]  # fmt: skip


def test_summary_names_the_longest_degraded() -> None:
    longest = summarise(rows_of(FLEET), NOW).longest_degraded
    assert longest is not None
    assert (longest.cluster, longest.since) == ("prod-3", NOW - timedelta(minutes=200))


def test_summary_without_degraded_names_none() -> None:
    assert summarise(rows_of([hub_copy("a")]), NOW).longest_degraded is None


def test_summary_counts_state_changes_in_the_last_hour() -> None:
    # prod-2 (30m) and test-1 (2m); prod-1 (90m) and prod-3 (200m) are older; test-2 unknown.
    assert summarise(rows_of(FLEET), NOW).changed_recently == 2


def test_summary_line_says_it_all_in_one_line() -> None:
    assert summary_line(summarise(rows_of(FLEET), NOW)) == (
        "5 clusters: 1 Available, 2 Degraded, 1 Progressing, 1 Unknown; longest Degraded: "
        "prod-3 for 3h20m; 2 changed state in the last hour"
    )


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        pytest.param(0, "0s", id="now"),
        pytest.param(-30, "0s", id="ahead-of-now"),
        pytest.param(119, "119s", id="seconds-under-two-minutes"),
        pytest.param(312, "5m12s", id="minutes-and-seconds-under-ten-minutes"),
        pytest.param(600, "10m", id="minutes-under-three-hours"),
        pytest.param(12000, "3h20m", id="hours-and-minutes-under-eight-hours"),
        pytest.param(36000, "10h", id="hours-under-two-days"),
        pytest.param(187200, "2d4h", id="days-and-hours-under-eight-days"),
        pytest.param(86400 * 30, "30d", id="days"),
        pytest.param(86400 * 800, "2y", id="years"),
    ],
)
def test_age_is_written_like_kubectl_s(seconds: int, text: str) -> None:
    assert age(NOW - timedelta(seconds=seconds), NOW) == text


def test_age_of_an_unknown_time_is_a_dash() -> None:
    assert age(None, NOW) == "-"


def test_table_has_a_row_per_cluster_and_the_summary() -> None:
    rows = rows_of(FLEET)
    lines = as_table(rows, summarise(rows, NOW), total=5).splitlines()
    assert lines[0].split() == ["CLUSTER", "STATE", "REASON", "SINCE", "READY", "VERSION",
                                "MESSAGE"]  # fmt: skip
    assert lines[3].split()[:6] == ["prod-3", "Degraded", "UpdateFailure", "3h20m", "-", "-"]
    assert lines[-1].startswith("5 clusters:")


def test_table_shows_a_message_s_first_line_cut_to_the_width() -> None:
    long = hub_copy("c1", message="MetricsCollector: " + "x" * 300 + "\nUwlMetricsCollector: y")
    rows = rows_of([long])
    table = as_table(rows, summarise(rows, NOW), total=1, width=100)
    assert all(len(line) <= 100 for line in table.splitlines())
    assert "UwlMetricsCollector" not in table and table.splitlines()[1].endswith("…")


def test_table_says_how_many_rows_the_filters_left() -> None:
    text = render(FLEET, NOW, filters=Filters(states=frozenset({"Degraded"})))
    assert text.splitlines()[-1].endswith("(shown: 2 of 5)")


def test_json_has_the_documented_shape() -> None:
    document = json.loads(render(FLEET, NOW, filters=Filters(clusters=("prod-*",)),
                                 output=Output("json")))  # fmt: skip
    assert list(document) == ["kind", "now", "total", "clusters", "summary"]
    assert (document["kind"], document["now"], document["total"]) == (
        SCHEMA, "2026-03-01T12:00:00Z", 5)  # fmt: skip
    assert document["clusters"][1] == {
        "cluster": "prod-2", "name": "observability-controller", "state": "Degraded",
        "reason": "ForwardFailure", "since": "2026-03-01T11:30:00Z",
        "message": "MetricsCollector: metrics sent", "ready": None, "versions": [],
    }  # fmt: skip
    assert document["summary"] == {
        "clusters": 3, "states": {"Available": 1, "Degraded": 2},
        "longestDegraded": {"cluster": "prod-3", "since": "2026-03-01T08:40:00Z"},
        "changedLastHour": 1,
    }  # fmt: skip


def test_json_of_an_unknown_row_has_nulls() -> None:
    row = row_of({"metadata": {"namespace": "c", "name": "a"}})
    assert isinstance(row, Row)
    document = json.loads(as_json([row], summarise([row], NOW), total=1))
    assert document["clusters"][0]["since"] is None and document["clusters"][0]["reason"] is None
    assert document["summary"]["longestDegraded"] is None


@pytest.mark.parametrize(
    "status",
    [
        pytest.param("Available", id="status-a-string"),
        pytest.param(["Available"], id="status-a-list"),
        pytest.param({"conditions": "Available"}, id="conditions-a-string"),
        pytest.param({"conditions": [{"type": ["Available"], "status": ["True"]}]}, id="lists"),
        pytest.param({"versions": "2.15.0", "conditions": [7]}, id="versions-a-string"),
    ],
)
def test_fleet_prints_a_row_for_a_copy_of_any_shape_without_a_traceback(status: object) -> None:
    row = row_of({"metadata": {"namespace": "c1", "name": "observability-addon"}, "status": status})
    assert (row.cluster, row.state) == ("c1", "Unknown")


def test_fleet_escapes_control_characters_a_copy_carries() -> None:
    """An escape sequence in a message, a reason or a version would clear the screen or forge a
    row; the table shows it as `\\xNN`."""
    copy = {
        "metadata": {"namespace": "c1", "name": "observability-addon"},
        "status": {
            "conditions": [
                {"type": "Available", "status": "True", "reason": "R\x1b[2J",
                 "message": "ok\x1b[31m\rc2  Available",
                 "lastTransitionTime": "2026-01-01T00:00:00Z"}
            ],
            "versions": [{"name": "metrics-collector", "version": "2.15\x1b[0m"}],
        },
    }  # fmt: skip
    table = render([copy], datetime(2026, 1, 1, tzinfo=UTC), filters=Filters())
    assert "\x1b" not in table and "\r" not in table
    assert "R\\x1b[2J" in table and "2.15\\x1b[0m" in table and "ok\\x1b[31m\\x0dc2" in table


def test_name_yaml_and_no_headers_write_what_kubectl_users_expect() -> None:
    names = render(FLEET, NOW, filters=Filters(), output=Output("name")).splitlines()
    assert names == sorted(names) and len(names) == len(FLEET)
    # kubectl's kind/name: a row is a cluster, named as its ManagedCluster
    assert all(n.startswith("managedcluster.cluster.open-cluster-management.io/") for n in names)
    text = render(FLEET, NOW, filters=Filters(), output=Output("json"))
    assert text.startswith('{\n    "kind": ')  # indented 4, as kubectl -o json
    document = yaml.safe_load(render(FLEET, NOW, filters=Filters(), output=Output("yaml")))
    assert document == json.loads(render(FLEET, NOW, filters=Filters(), output=Output("json")))
    bare = render(FLEET, NOW, filters=Filters(), output=Output(headers=False)).splitlines()
    assert len(bare) == len(FLEET) and not bare[0].startswith("CLUSTER")


def test_wide_lines_are_not_cut_to_the_terminal() -> None:
    table = render(FLEET, NOW, filters=Filters(), width=40)
    wide = render(FLEET, NOW, filters=Filters(), width=40, output=Output("wide"))
    assert any(line.endswith("…") for line in table.splitlines())
    assert not any(len(line) > 40 and line.endswith("…") for line in wide.splitlines())


@pytest.mark.parametrize("key", ["state", "since"])
def test_sort_by_orders_the_rows(key: str) -> None:
    document = json.loads(render(FLEET, NOW, filters=Filters(), output=Output("json", sort_by=key)))
    values = [c[key] for c in document["clusters"]]
    known = [v for v in values if v is not None]
    assert known == sorted(known)
    assert values[: len(known)] == known  # unknown times last


def test_w_is_watch_as_in_kubectl() -> None:
    from controller.cli import parser

    args = parser("fleet").parse_args(["fleet", "-w"])
    assert args.watch is True
