"""After the play the demo's collectors report on (controller/demo/last_words.py): each says its
last word again, interval after the controller last heard about it; the operator's report to
all is every collector's last word; a collector left stale, or never heard about, stays silent;
the interval is safe against staleness (docs/spec.md §4) whatever the settings."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from controller.demo.last_words import LastWords, interval
from statemachines.config import Config
from statemachines.settings import Settings
from statemachines.state import initial_state

T0 = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
MC, UWL = "metrics-collector", "uwl-metrics-collector"


def _report(collector: str | None, reason: str) -> dict[str, Any]:
    return {"collector": collector, "reason": reason, "message": "m",
            "observed_generation": None, "version": None}  # fmt: skip


@pytest.mark.parametrize(
    ("settings", "every"),
    [
        pytest.param({}, timedelta(minutes=5), id="the-report-interval-by-default"),
        pytest.param({"staleAfter": "6m"}, timedelta(minutes=2), id="a-third-of-a-short-limit"),
        pytest.param({"reportInterval": "1m"}, timedelta(minutes=1), id="a-shorter-interval"),
    ],
)
def test_a_collector_reports_on_often_enough_never_to_go_stale(
    settings: dict[str, str], every: timedelta
) -> None:
    assert interval(Settings.model_validate(settings)) == every


def test_each_collector_says_its_last_word_again_an_interval_after_it_was_heard() -> None:
    config = Config.create(collector_settings={UWL: {"reportInterval": "2m"}})
    words = LastWords(config)
    words.heard(_report(None, "UpdateSuccessful"))  # the operator's, to all
    words.heard(_report(MC, "ForwardSuccessful"))
    state = initial_state(config, T0)
    assert words.due(state) == [
        (T0 + timedelta(minutes=2), _report(UWL, "UpdateSuccessful")),
        (T0 + timedelta(minutes=5), _report(MC, "ForwardSuccessful")),
    ]
    assert words.every(_report(UWL, "UpdateSuccessful")) == "2m"


def test_a_collector_left_stale_or_never_heard_about_stays_silent() -> None:
    config = Config.create()
    words = LastWords(config)
    words.heard(_report(MC, "ForwardSuccessful"))
    words.heard(_report("no-such-collector", "ForwardSuccessful"))  # refused by the API: no word
    state = initial_state(config, T0)
    assert [report["collector"] for _, report in words.due(state)] == [MC]
    stale = state.with_collector(replace(state.collector(MC), stale=True))
    assert words.due(stale) == []
