"""`json_copy`, the deep copy the spoke makes of every status it writes and publishes: the
copy and the original share no container, so a hook that edits its copy cannot change the
status the writer keeps (what `copy.deepcopy` guaranteed before)."""

from __future__ import annotations

from types import MappingProxyType

from controller.kube.api import json_copy


def test_a_copy_equals_the_original_and_shares_no_container_with_it() -> None:
    original = {
        "metadata": {"name": "a", "labels": {"x": "1"}},
        "status": {"conditions": [{"type": "Available", "observedGeneration": 2}], "ok": True,
                   "ratio": 0.5, "none": None, "empty": [], "nested": [[{"k": "v"}]]},
    }  # fmt: skip
    copied = json_copy(original)
    assert copied == original
    copied["metadata"]["labels"]["x"] = "2"
    copied["status"]["conditions"][0]["type"] = "Degraded"
    copied["status"]["conditions"].append({})
    copied["status"]["empty"].append(1)
    copied["status"]["nested"][0][0]["k"] = "w"
    assert original == {
        "metadata": {"name": "a", "labels": {"x": "1"}},
        "status": {"conditions": [{"type": "Available", "observedGeneration": 2}], "ok": True,
                   "ratio": 0.5, "none": None, "empty": [], "nested": [[{"k": "v"}]]},
    }  # fmt: skip


def test_a_mapping_or_tuple_that_is_no_plain_dict_or_list_is_copied_too() -> None:
    """What `copy.deepcopy` guaranteed for any container a caller hands in."""
    inner = {"type": "Available"}
    original = {"view": MappingProxyType({"conditions": (inner,)})}
    copied = json_copy(original)
    assert copied == {"view": {"conditions": ({"type": "Available"},)}}
    copied["view"]["conditions"][0]["type"] = "Degraded"
    assert inner == {"type": "Available"}
