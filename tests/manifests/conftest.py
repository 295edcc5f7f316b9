"""The manifests as the tests read them: each kustomization built by the project's small
kustomize (tests/manifests/kustomize.py), and the objects the tests look at most."""

from __future__ import annotations

from typing import Any

import pytest

from tests.manifests.kustomize import MANIFESTS, build, find

Obj = dict[str, Any]


@pytest.fixture
def spoke() -> list[Obj]:
    """`kubectl kustomize manifests/base`: what a spoke gets."""
    return build(MANIFESTS / "base").objects


@pytest.fixture
def hub() -> list[Obj]:
    """`kubectl kustomize manifests/hub`: what the hub gets."""
    return build(MANIFESTS / "hub").objects


@pytest.fixture
def deployment(spoke: list[Obj]) -> Obj:
    return find(spoke, "Deployment", "addon-status-controller")


@pytest.fixture
def pod(deployment: Obj) -> Obj:
    spec: Obj = deployment["spec"]["template"]["spec"]
    return spec


@pytest.fixture
def container(pod: Obj) -> Obj:
    assert [c["name"] for c in pod["containers"]] == ["controller"]
    container: Obj = pod["containers"][0]
    return container
