"""Request bodies decoded like kube-apiserver: JSON only, Go's number limits, bounded nesting; every
failure a 400 or 415 Status, never a crash."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.controlplane.decoding import MAX_DEPTH, decode, depth, require_json
from proxyfleet.simulators.controlplane.errors import APIError


def test_json_decodes_and_depth_counts_levels() -> None:
    assert decode(b'{"a": [1, 2.5, {"b": null}]}') == {"a": [1, 2.5, {"b": None}]}
    assert depth({"a": [{"b": 1}]}) > depth({"a": 1}) > depth(1)


@pytest.mark.parametrize(("body", "message"), [
    (b"\xff\xfe", "could not be decoded as JSON"),
    (b'{"a": ', "could not be decoded as JSON"),
    (b'{"n": ' + b"9" * 30 + b"}", ""),
    (b'{"n": NaN}', ""),
    (b"[" * (MAX_DEPTH + 5) + b"]" * (MAX_DEPTH + 5), "nests deeper than"),
])
def test_bad_bodies_are_400(body: bytes, message: str) -> None:
    with pytest.raises(APIError) as caught:
        decode(body)
    assert caught.value.code == 400 and message in caught.value.message


def test_only_json_is_accepted() -> None:
    require_json(None)
    require_json("application/json; charset=utf-8")
    with pytest.raises(APIError) as caught:
        require_json("application/yaml")
    assert caught.value.code == 415
