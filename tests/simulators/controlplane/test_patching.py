"""Patches as kube-apiserver applies them: RFC 7386 merge patches (null deletes), RFC 6902 JSON
patches with their errors, and 415 for server-side apply or an unknown type."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.patching import apply_patch, json_patch, merge_patch

MERGE = "application/merge-patch+json"


def test_merge_patch_merges_objects_replaces_lists_and_null_deletes() -> None:
    document = {"metadata": {"labels": {"a": "1", "b": "2"}}, "spec": {"list": [1, 2]}}
    patched = merge_patch(document, {"metadata": {"labels": {"a": None, "c": "3"}}, "spec": {"list": [3]}})
    assert patched == {"metadata": {"labels": {"b": "2", "c": "3"}}, "spec": {"list": [3]}}
    assert document["metadata"]["labels"] == {"a": "1", "b": "2"}  # the input is left alone


def test_json_patch_operations() -> None:
    document = {"spec": {"items": ["a", "b"], "n": 1}}
    patched = json_patch(document, [
        {"op": "add", "path": "/spec/items/-", "value": "c"},
        {"op": "replace", "path": "/spec/n", "value": 2},
        {"op": "remove", "path": "/spec/items/0"},
        {"op": "test", "path": "/spec/n", "value": 2},
        {"op": "add", "path": "/metadata~1x", "value": True},
    ])
    assert patched == {"spec": {"items": ["b", "c"], "n": 2}, "metadata/x": True}


def test_a_failing_json_patch_is_422_and_changes_nothing() -> None:
    document = {"spec": {"n": 1}}
    with pytest.raises(APIError) as caught:
        json_patch(document, [{"op": "replace", "path": "/spec/n", "value": 2},
                              {"op": "remove", "path": "/spec/missing"}])
    assert caught.value.code == 422
    assert document == {"spec": {"n": 1}}


@pytest.mark.parametrize("content_type", ["application/apply-patch+yaml", "text/plain"])
def test_unsupported_patch_types_are_415(content_type: str) -> None:
    with pytest.raises(APIError) as caught:
        apply_patch(content_type, {}, {})
    assert caught.value.code == 415


def test_a_merge_patch_must_be_an_object() -> None:
    with pytest.raises(APIError) as caught:
        apply_patch(MERGE, {}, [1])
    assert caught.value.code == 400
