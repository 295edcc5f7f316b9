"""Where the stored state goes (section 11 of the rules).

In a profile whose CRD keeps our bookkeeping (`seed`), the CR's status is `stored.to_status`.
In one that does not (`acm`: the upstream CRD keeps only the five fields of each condition and
prunes the rest), the CR's status holds the profile's conditions cut to those fields, and the
whole of `stored.to_status` — open windows, generations, pending states, whatever `stored`
grows — is the bookkeeping the shell keeps beside the CR (a ConfigMap it owns) and gives back
to `start` as the status to resume from.
"""

from __future__ import annotations

from typing import Any

from statemachines.state import AddonState
from statemachines.stored import to_status
from statemachines.vocabulary import Profile

__all__ = ["UPSTREAM_CONDITION_FIELDS", "bookkeeping", "on_cr"]

# What `StatusCondition` of the upstream ObservabilityAddon CRD keeps, all required.
UPSTREAM_CONDITION_FIELDS = ("type", "status", "lastTransitionTime", "reason", "message")


def on_cr(state: AddonState, profile: Profile) -> dict[str, Any]:
    """The status the addon CR holds for `state`."""
    status = to_status(state)
    if profile.status_keeps_bookkeeping:
        return status
    written = {*profile.standard_types, *(c.condition_type for c in profile.collectors)}
    return {
        "conditions": [
            {key: c[key] for key in UPSTREAM_CONDITION_FIELDS}
            for c in status["conditions"]
            if c["type"] in written
        ]
    }


def bookkeeping(state: AddonState, profile: Profile) -> dict[str, Any] | None:
    """What is kept beside the CR for `state` (None: the CR's status keeps it all)."""
    return None if profile.status_keeps_bookkeeping else to_status(state)
