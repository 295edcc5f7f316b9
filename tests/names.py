"""The collectors' names as the tests write them: one copy, light (no client, no server), so
that every test module and benchmark can import it."""

from __future__ import annotations

__all__ = ["MC", "UWL"]

MC = "metrics-collector"
UWL = "uwl-metrics-collector"
