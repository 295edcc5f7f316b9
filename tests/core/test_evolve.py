"""`evolve` (statemachines/evolve.py) is `dataclasses.replace` for the core's values: the same
result, the value's own checks still run, and a wrong name is an error."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

import pytest

from statemachines.conditions import Condition, ConditionStatus
from statemachines.evolve import evolve
from statemachines.state import CollectorState, Pending
from statemachines.vocabulary import Reason, State
from tests.core.conftest import T0


def test_it_is_what_replace_gives() -> None:
    window = Pending(Reason.FORWARD_FAILURE, T0, "503")
    c = CollectorState(
        "metrics-collector", State.AVAILABLE, Reason.FORWARD_SUCCESSFUL, "sent", T0, 3, window,
        heard_at=T0,
    )  # fmt: skip
    later = T0 + timedelta(minutes=1)
    for changes in ({"heard_at": later}, {"pending": None, "message": "x"}, {}):
        made, replaced = evolve(c, **changes), dataclasses.replace(c, **changes)
        assert made == replaced and made.heard_at == replaced.heard_at
        assert made is not c


def test_the_values_own_checks_run() -> None:
    condition = Condition("Available", ConditionStatus.TRUE, "Ok", "m", T0, 1)
    with pytest.raises(ValueError, match="not a valid reason"):
        evolve(condition, reason="not valid!")
    assert (
        evolve(condition, last_transition_time=T0.replace(microsecond=5)).last_transition_time == T0
    )


def test_a_name_that_is_no_field_is_an_error() -> None:
    with pytest.raises(TypeError, match="CollectorState has no field 'heard'"):
        evolve(CollectorState("metrics-collector"), heard=T0)
