import pytest

from proxyfleet.simulators.controlplane.jsoncopy import copy_json


def test_a_copy_is_equal_and_shares_no_dict_or_list() -> None:
    node = {"metadata": {"name": "n", "labels": {"a": "b"}}, "status": {"conditions": [{"type": "Ready"}]},
            "spec": {"unschedulable": False, "podCIDR": None, "weight": 1.5, "count": 3}}
    copied = copy_json(node)
    assert copied == node
    copied["metadata"]["labels"]["a"] = "changed"
    copied["status"]["conditions"][0]["type"] = "changed"
    copied["status"]["conditions"].append({})
    assert node["metadata"]["labels"] == {"a": "b"} and node["status"]["conditions"] == [{"type": "Ready"}]


@pytest.mark.parametrize("value", [("a", "tuple"), {"set"}, b"bytes", object()])
def test_anything_that_is_not_json_is_refused_not_shared(value: object) -> None:
    with pytest.raises(TypeError, match="not a JSON value"):
        copy_json({"metadata": {"annotations": {"x": value}}})
