"""docs/spec.md §9, history: the last `historyLimit` changes of the addon's True standard
type or of its reason, newest first, each `{type, reason, message, lastTransitionTime}`; the
first status starts it; it changes with the conditions (so in the same status write); a
heartbeat, a refused report, a generation change or a message-only change adds nothing; it
survives a restart. A property: no two neighbours share a type and a reason."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given

from statemachines.core import resume
from statemachines.reports import VerdictKind
from statemachines.stored import to_status
from tests.core.conftest import MC, MIN, T0, UWL, Run
from tests.core.test_properties import ORDERS, PROPERTY, SETTINGS, STEPS, _reached
from tests.names import R, T


def _types_and_reasons(run: Run) -> list[tuple[str, str]]:
    return [(h.type, h.reason) for h in run.state.history]


def test_the_first_status_starts_the_history() -> None:
    run = Run.begin()
    [entry] = to_status(run.state)["history"]
    assert entry == {
        "type": "Progressing",
        "reason": "UpdateSuccessful",
        "message": run.condition(T.PROGRESSING).message,
        "lastTransitionTime": "2025-01-01T12:00:00Z",
    }


def test_a_change_of_the_true_type_is_recorded_newest_first() -> None:
    run = Run.begin(collectors=[MC])
    run.play([(MIN, R.UPDATE_SUCCESSFUL, None, "deployed"), (2 * MIN, R.FORWARD_SUCCESSFUL)])
    assert _types_and_reasons(run) == [
        (T.AVAILABLE, R.FORWARD_SUCCESSFUL),
        (T.PROGRESSING, R.UPDATE_SUCCESSFUL),
    ]
    assert run.state.history[0].at == T0 + 2 * MIN


def test_a_change_of_the_reason_alone_is_recorded() -> None:
    run = Run.begin(collectors=[MC], settings={"staleAfter": "5m"})
    run.play([(MIN, R.FORWARD_FAILURE), (7 * MIN, None)])  # Degraded: ForwardFailure -> stale
    assert _types_and_reasons(run)[:2] == [
        (T.DEGRADED, R.REPORTS_STALE),
        (T.DEGRADED, R.FORWARD_FAILURE),
    ]


def test_the_history_changes_in_the_same_status_write_as_the_change() -> None:
    run = Run.begin(collectors=[MC])
    outcome = run.report(R.FORWARD_SUCCESSFUL)
    assert outcome.changed and outcome.state.history[0].type == T.AVAILABLE
    assert outcome.conditions == outcome.state.conditions


def test_a_heartbeat_adds_nothing_even_with_a_new_message() -> None:
    run = Run.begin(collectors=[MC])
    run.report(R.FORWARD_SUCCESSFUL, message="sent")
    before = run.state.history
    run.at(MIN).report(R.FORWARD_SUCCESSFUL, message="sent again")
    assert run.last.changed  # the message changed...
    assert run.state.history == before  # ...but not the type or its reason


def test_a_refused_report_adds_nothing() -> None:
    run = Run.begin(collectors=[MC])
    run.report(R.UPDATE_FAILURE)
    before = run.state.history
    assert run.at(MIN).report(R.FORWARD_SUCCESSFUL).verdict.kind == "refused"  # type: ignore[union-attr]
    assert run.state.history == before


def test_a_refused_report_that_ends_staleness_records_the_end_of_staleness() -> None:
    run = Run.begin(collectors=[MC], settings={"staleAfter": "5m"})
    run.report(R.UPDATE_FAILURE)
    run.advance(6 * MIN)
    assert _types_and_reasons(run)[0] == (T.DEGRADED, R.REPORTS_STALE)
    refused = run.report(R.FORWARD_SUCCESSFUL).verdict  # only UpdateSuccessful clears it
    assert refused is not None and refused.kind is VerdictKind.REFUSED
    assert _types_and_reasons(run)[:2] == [
        (T.DEGRADED, R.UPDATE_FAILURE),
        (T.DEGRADED, R.REPORTS_STALE),
    ]


def test_a_generation_change_adds_nothing() -> None:
    run = Run.begin(collectors=[MC])
    before = run.state.history
    assert run.at(MIN).observe(2).changed
    assert run.state.history == before


def test_a_message_only_change_of_the_addon_adds_nothing() -> None:
    """The other collector's message changes the addon's message, not its type or reason."""
    run = Run.begin()
    run.play([(0 * MIN, R.FORWARD_SUCCESSFUL, MC, "a"), (MIN, R.FORWARD_SUCCESSFUL, UWL, "b")])
    before = run.state.history
    run.at(2 * MIN).report(R.FORWARD_SUCCESSFUL, UWL, "c")
    assert run.state.history == before


def test_the_history_keeps_the_last_history_limit_changes() -> None:
    run = Run.begin(collectors=[MC], settings={"historyLimit": 2, "degradeAfter": "0s"})
    run.play(
        [(MIN, R.FORWARD_SUCCESSFUL), (2 * MIN, R.FORWARD_FAILURE), (3 * MIN, R.FORWARD_SUCCESSFUL)]
    )
    assert _types_and_reasons(run) == [
        (T.AVAILABLE, R.FORWARD_SUCCESSFUL),
        (T.DEGRADED, R.FORWARD_FAILURE),
    ]


def test_a_history_limit_of_0_switches_the_history_off() -> None:
    run = Run.begin(collectors=[MC], settings={"historyLimit": 0})
    run.report(R.FORWARD_SUCCESSFUL)
    assert run.state.history == ()
    assert "history" not in to_status(run.state)


def test_the_history_survives_a_restart() -> None:
    run = Run.begin(collectors=[MC])
    run.report(R.FORWARD_SUCCESSFUL, message="sent")
    before = run.state.history
    assert run.restart(MIN).state.history == before


@PROPERTY
@given(order=ORDERS, config=SETTINGS, steps=STEPS)
def test_the_history_never_holds_two_neighbours_with_the_same_type_and_reason(
    order: list[str], config: dict[str, Any], steps: list[tuple[Any, ...]]
) -> None:
    run = _reached(order, config, steps)
    pairs = _types_and_reasons(run)
    assert all(a != b for a, b in itertools.pairwise(pairs)), pairs
    assert 1 <= len(pairs) <= run.config.history_limit
    assert pairs[0] == (run.addon(), run.condition(run.addon()).reason)


@pytest.mark.parametrize(
    ("field", "value", "where"),
    [
        pytest.param("history", [{"type": "Available"}], "status.history[0]", id="history-entry"),
        pytest.param("history", "often", "status.history", id="history-not-a-list"),
        pytest.param("lastKnownGood", {"generation": "x"}, "status.lastKnownGood", id="good"),
    ],
)
def test_a_stored_story_that_cannot_be_read_is_absent_and_named(
    field: str, value: object, where: str
) -> None:
    """docs/spec.md §6, what is read back is checked: the field is taken as absent, never a
    crash; the shell is told which."""
    run = Run.begin(collectors=[MC])
    status = {**to_status(run.state), field: value}
    resumed = resume(run.config, T0, status=status)
    assert where in [str(problem).split(":")[0] for problem in resumed.ignored]
    assert resumed.state.last_known_good is None or field != "lastKnownGood"
