"""docs/spec.md §6, Size: every status fits what the API server stores, by construction.

Texts are cut at their limits (a report's message 1,024 characters, the addon's 4,096, a
history entry's 256, a resource's 1,024), ending in `…`; the whole status, as the client sends
it, stays within 256 KiB whatever the reports, the configuration and the watched objects say —
in `acm` the bookkeeping ConfigMap's data too — because texts shrink further when they must and
a configuration whose status could not fit is refused when it is loaded, naming the limit.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statemachines.config import Config
from statemachines.config_file import load_configuration
from statemachines.core import advance, apply, observe_object, start
from statemachines.errors import ConfigError
from statemachines.health import load_resources
from statemachines.placement import bookkeeping, bookkeeping_size, on_cr
from statemachines.reports import parse_report
from statemachines.settings import Settings
from statemachines.size import BUDGET, cut, encoded_size, fitted
from statemachines.state import AddonState
from statemachines.stored import to_status
from statemachines.vocabulary import ACM, SEED, Profile
from tests.core.conftest import MC, MIN, T0, UWL, Run
from tests.properties import examples

WIDEST = "\U0001f600"  # 12 bytes as the client sends it


def _resources(count: int, *, name: str = "r") -> list[dict[str, Any]]:
    return [
        {
            "name": f"{name}{i}",
            "object": {"apiVersion": "v1", "kind": "ConfigMap", "name": f"object-{i}"},
            "for": "1m",
            "healthRule": {"singleConditionType": "Ready"},
        }
        for i in range(count)
    ]


def test_a_cut_text_is_exactly_the_limit_long_and_ends_in_an_ellipsis() -> None:
    assert cut("a" * 10, 10) == "a" * 10
    assert cut("a" * 11, 10) == "a" * 9 + "…"
    assert cut(WIDEST * 2000, 1024) == WIDEST * 1023 + "…"


def test_a_reports_message_is_cut_to_1024_characters_wherever_it_is_written() -> None:
    run = Run.begin(settings={"degradeAfter": "10m"})
    run.report("ForwardSuccessful", MC, WIDEST * 5000)
    run.at(T0 + MIN).report("ForwardFailure", MC, "f" * 5000)  # opens a window
    status = to_status(run.state)
    [mc] = [c for c in status["collectors"] if c["name"] == MC]
    assert mc["message"] == WIDEST * 1023 + "…"
    assert mc["pendingMessage"] == "f" * 1023 + "…"
    own = next(c for c in status["conditions"] if c["type"] == "MetricsCollectorStatus")
    assert own["message"] == WIDEST * 1023 + "…"


def test_the_addons_message_is_cut_to_4096_characters() -> None:
    resources = load_resources(_resources(20), namespace="addons", collectors=[MC, UWL])
    config = Config.create(resources=resources)
    state = start(config, T0)
    for r in resources:
        down = {
            "status": {"conditions": [{"type": "Ready", "status": "False", "message": "m" * 2000}]}
        }
        state = observe_object(state, r.name, down, T0, config=config).state
    status = to_status(state)
    for condition in status["conditions"]:
        if condition["type"] in ("Degraded", "ResourcesHealthy"):  # Degraded is True
            assert len(condition["message"]) == 4096 and condition["message"].endswith("…")
    for entry in status["resources"]:
        assert len(entry["conditions"][0]["message"]) == 1024  # a resource's own limit


def test_a_history_entrys_message_is_cut_to_256_characters() -> None:
    run = Run.begin(collectors=[MC])
    run.report("ForwardSuccessful", MC, "u" * 900)
    [entry, *_] = to_status(run.state)["history"]
    assert entry["type"] == "Available"
    assert len(entry["message"]) == 256 and entry["message"].endswith("…")


def test_a_status_within_the_budget_is_kept_as_it_is() -> None:
    status = {"conditions": [{"type": "Available", "message": "m" * 4096}]}
    assert fitted(status) is status


def test_over_the_budget_every_text_is_cut_by_one_factor_until_it_fits() -> None:
    wide = WIDEST * 1024
    status: dict[str, Any] = {
        "conditions": [{"type": f"T{i}", "message": WIDEST * 4096} for i in range(6)],
        "history": [{"message": wide[:256]} for _ in range(20)],
    }
    assert encoded_size(status) > BUDGET
    short = fitted(status)
    assert encoded_size(short) <= BUDGET
    assert {len(c["message"]) for c in short["conditions"]} == {2048}  # halved once
    assert {len(h["message"]) for h in short["history"]} == {128}


Step = tuple[str, Any]
_MESSAGES = st.text(alphabet=st.sampled_from([WIDEST, "é", "x", "\u2603"]), max_size=1500)
_STEPS = st.lists(
    st.one_of(
        st.tuples(
            st.just("report"),
            st.tuples(
                st.sampled_from([MC, UWL, None]),
                st.sampled_from(
                    ["ForwardSuccessful", "ForwardFailure", "UpdateSuccessful", "UpdateFailure"]
                ),
                _MESSAGES,
            ),
        ),
        st.tuples(st.just("object"), st.tuples(st.integers(0, 63), st.booleans(), _MESSAGES)),
        st.tuples(st.just("time"), st.integers(1, 30)),
    ),
    max_size=25,
)


def _drive(
    profile: Profile, steps: list[Step], *, resources: int, history: int
) -> list[AddonState]:
    raw = _resources(resources)
    config = Config.create(
        profile=profile,
        settings=Settings.model_validate({"historyLimit": history, "degradeAfter": "5m"}),
        resources=load_resources(raw, namespace="addons", collectors=[MC, UWL]),
    )
    now, state = T0, start(config, T0)
    seen = [state]
    for kind, value in steps:
        if kind == "report":
            collector, reason, message = value
            if collector is None and reason.startswith("Forward"):
                continue
            body = {"reason": reason, "message": message}
            body |= {"collector": collector} if collector else {}
            if reason == "UpdateSuccessful":
                body["version"] = WIDEST * 64
            state = apply(state, parse_report(body, config), now, config=config).state
        elif kind == "object":
            if not resources:
                continue
            index, healthy, message = value
            condition = {"type": "Ready", "status": str(healthy), "message": message}
            obj = {"status": {"conditions": [condition]}}
            state = observe_object(state, f"r{index % resources}", obj, now, config=config).state
        else:
            now += timedelta(minutes=value)
            state = advance(state, now, config=config).state
        seen.append(state)
    return seen


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    profile=st.sampled_from([SEED, ACM]),
    steps=_STEPS,
    resources=st.sampled_from([0, 8, 64]),
    history=st.sampled_from([0, 10, 1000]),
)
def test_every_status_written_fits_the_budget_whatever_the_inputs(
    profile: Profile, steps: list[Step], resources: int, history: int
) -> None:
    """The largest inputs the report API and a watch accept — messages of the widest
    characters, versions of 64 of them, every collector, a full history, 64 resources — never
    make a status (or, in acm, the bookkeeping ConfigMap's data) larger than the budget, as the
    client sends it; and every text keeps its limit."""
    for state in _drive(profile, steps, resources=resources, history=history):
        assert encoded_size(on_cr(state, profile)) <= BUDGET
        kept = bookkeeping(state, profile)
        if kept is not None:
            assert bookkeeping_size(kept) <= BUDGET
        status = to_status(state)
        for c in status["conditions"]:
            assert len(c["message"]) <= 4096
        for c in status["collectors"]:
            assert len(c.get("message", "")) <= 1024 and len(c.get("pendingMessage", "")) <= 1024
        for h in status.get("history", []):
            assert len(h["message"]) <= 256


def _configure(text: str) -> Config:
    return load_configuration(text, source="config.yaml", namespace="addons")[0]


@pytest.mark.parametrize(
    ("configuration", "named"),
    [
        pytest.param({"resources": _resources(65)}, "at most 64", id="65-resources"),
        pytest.param(  # refused by its count, before a rule is compiled (the last one is broken)
            {"resources": [*_resources(4999), {**_resources(1)[0], "healthRule": {"cel": {}}}]},
            "resources: 5000 configured; the CRD keeps at most 64",
            id="5000-resources-refused-before-compiling",
        ),
        pytest.param(
            {
                "relatedObjects": [
                    {"group": "", "resource": "pods", "name": f"p{i}"} for i in range(255)
                ]
            },
            "at most 256",
            id="related-objects-beyond-256-with-the-controllers-own",
        ),
        pytest.param(
            {
                "resources": [
                    {
                        **_resources(1)[0],
                        "object": {"apiVersion": "v1", "kind": "ConfigMap", "name": "n" * 300},
                    }
                ]
            },
            "253",
            id="a-300-character-object-name",
        ),
        pytest.param(
            {
                "resources": [
                    {
                        **_resources(1)[0],
                        "object": {"apiVersion": "v1", "kind": "K" * 64, "name": "n"},
                    }
                ]
            },
            "63",
            id="a-64-character-kind",
        ),
        pytest.param(
            {"relatedObjects": [{"group": "", "resource": "r" * 64, "name": "n"}]},
            "63",
            id="a-64-character-resource",
        ),
    ],
)
def test_a_configuration_the_crd_cannot_hold_is_refused_naming_the_limit(
    configuration: dict[str, Any], named: str
) -> None:
    import yaml

    with pytest.raises(ConfigError, match=named):
        _configure(yaml.safe_dump(configuration))


def test_a_configuration_whose_status_could_exceed_the_budget_is_refused() -> None:
    """Within every list limit of the CRD, but together too large even with every message at
    its shortest: 64 resources, 180 related objects of the longest names, a history of 1,000."""
    import yaml

    related = [
        {"group": "g" * 253, "resource": "r" * 63, "namespace": "n" * 63, "name": f"{i:0>253}"}
        for i in range(180)
    ]
    text = yaml.safe_dump({"resources": _resources(64), "relatedObjects": related})
    with pytest.raises(ConfigError, match=r"the budget is 262,144 bytes"):
        load_configuration(
            text, source="config.yaml", namespace="addons", settings=Settings(historyLimit=1000)
        )


def test_the_largest_configuration_within_the_budget_loads() -> None:
    import yaml

    config = _configure(yaml.safe_dump({"resources": _resources(64)}))
    assert len(config.resources) == 64
