"""The rollout's world (world.py) for every test of this folder."""

from tests.ocm.world import flavour, hub, hub_side, rollout, spokes

__all__ = ["flavour", "hub", "hub_side", "rollout", "spokes"]
