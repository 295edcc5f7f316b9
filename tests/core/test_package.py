"""The core's package names load on first use (docs/architecture.md): each name it exports is
its module's own object, and nothing else answers."""

from __future__ import annotations

import importlib

import pytest

import statemachines


@pytest.mark.parametrize("name", statemachines.__all__)
def test_every_exported_name_is_its_module_s_object(name: str) -> None:
    module = importlib.import_module(statemachines._WHERE[name])
    assert getattr(statemachines, name) is getattr(module, name)


def test_the_exports_and_the_table_list_the_same_names() -> None:
    assert sorted(statemachines.__all__) == sorted(statemachines._WHERE)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'apply_all'"):
        _ = statemachines.apply_all  # type: ignore[attr-defined]
