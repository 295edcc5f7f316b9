"""Release 0.1.0's rollout beside the current one, for the upgrade tests: where 0.1.0's
manifests are pinned (tests/data/releases/0.1.0) and each flavour's rollout overlay."""

from __future__ import annotations

from typing import Final

from tests.manifests.kustomize import ROOT

PREVIOUS: Final = ROOT / "tests" / "data" / "releases" / "0.1.0" / "manifests"
ROLLOUTS: Final = {"seed": "ocm", "acm": "ocm/acm"}  # under manifests/, either release
