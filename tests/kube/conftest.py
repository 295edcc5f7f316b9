"""The seam's two sides, for every test of the loop."""

from tests.kube.backends import backend

__all__ = ["backend"]
