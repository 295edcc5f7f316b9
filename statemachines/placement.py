"""Where the stored state goes (docs/spec.md §11).

In a profile whose CRD keeps our bookkeeping (`seed`), the CR's status is `stored.to_status`.
In one that does not (`acm`: the upstream CRD keeps only the five fields of each condition and
prunes the rest), the whole of `stored.to_status` — open windows, generations, pending states,
whatever `stored` grows — is the bookkeeping the shell keeps beside the CR (one JSON document,
`bookkeeping_text`, under the key `KEY` of a ConfigMap it owns) and gives back to `start` as the
status to resume from; the CR holds its conditions cut to those five fields. Both fit the
budget of docs/spec.md §6: the bookkeeping as the ConfigMap's data is sent, the CR's conditions
with it.
"""

from __future__ import annotations

import json
from typing import Any

from statemachines.size import encoded_size
from statemachines.state import AddonState
from statemachines.stored import to_status
from statemachines.vocabulary import Profile

__all__ = [
    "KEY",
    "UPSTREAM_CONDITION_FIELDS",
    "bookkeeping",
    "bookkeeping_size",
    "bookkeeping_text",
    "on_cr",
]

# What `StatusCondition` of the upstream ObservabilityAddon CRD keeps, all required.
UPSTREAM_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message")
KEY = "status.json"  # the ConfigMap's data key that holds the bookkeeping


def bookkeeping_text(status: dict[str, Any]) -> str:
    """The bookkeeping as the ConfigMap holds it: compact JSON, keys sorted (one text per
    state, so an unchanged state is no write), characters as they are (the client escapes them
    once, when it sends the ConfigMap)."""
    return json.dumps(status, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def bookkeeping_size(status: dict[str, Any]) -> int:
    """Bytes of the ConfigMap's data holding `status`, as the client sends it."""
    return encoded_size({KEY: bookkeeping_text(status)})


def on_cr(state: AddonState, profile: Profile) -> dict[str, Any]:
    """The status the addon CR holds for `state`."""
    if profile.status_keeps_bookkeeping:
        return to_status(state)
    kept = to_status(state, measure=bookkeeping_size)
    written = {*profile.standard_types, *(c.condition_type for c in profile.collectors)}
    return {
        "conditions": [
            {key: c[key] for key in UPSTREAM_CONDITION_FIELDS}
            for c in kept["conditions"]
            if c["type"] in written
        ]
    }


def bookkeeping(state: AddonState, profile: Profile) -> dict[str, Any] | None:
    """What is kept beside the CR for `state` (None: the CR's status keeps it all)."""
    if profile.status_keeps_bookkeeping:
        return None
    return to_status(state, measure=bookkeeping_size)
