"""The upstream CRDs under tests/data/upstream/ are the upstream files byte for byte: each matches
the digest it was pinned with (tests/data/upstream/SHA256SUMS), and the copies the demo carries
in the wheel are those files too."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

UPSTREAM = Path(__file__).resolve().parent / "data" / "upstream"


def _pinned() -> dict[str, str]:
    lines = (UPSTREAM / "SHA256SUMS").read_text().splitlines()
    return {name: digest for digest, name in (line.split() for line in lines if line.strip())}


def test_every_upstream_crd_is_pinned() -> None:
    assert set(_pinned()) == {p.name for p in UPSTREAM.glob("*.yaml")}


@pytest.mark.parametrize("name", sorted(_pinned()))
def test_an_upstream_crd_is_the_pinned_file_byte_for_byte(name: str) -> None:
    assert hashlib.sha256((UPSTREAM / name).read_bytes()).hexdigest() == _pinned()[name]
