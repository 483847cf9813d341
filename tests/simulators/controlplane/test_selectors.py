"""Label and field selectors with kube-apiserver's syntax: equality, sets, existence."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.controlplane.errors import APIError
from proxyfleet.simulators.controlplane.selectors import field_selector, label_selector


def labelled(**labels: str) -> dict[str, object]:
    return {"metadata": {"name": "x", "namespace": "ns", "labels": labels}}


@pytest.mark.parametrize(("selector", "matches"), [
    ("app=web", True), ("app==web", True), ("app!=web", False), ("app in (web, api)", True),
    ("app notin (web)", False), ("tier", True), ("!tier", False), ("app=web,tier=front", True),
    ("app=web,tier=back", False), ("missing!=x", True), ("", True),
])
def test_label_selectors(selector: str, matches: bool) -> None:
    assert label_selector(selector)(labelled(app="web", tier="front")) is matches


def test_field_selectors_on_metadata() -> None:
    assert field_selector("metadata.name=x", "configmaps")(labelled())
    assert not field_selector("metadata.namespace!=ns", "configmaps")(labelled())


def test_a_malformed_selector_is_400() -> None:
    with pytest.raises(APIError) as caught:
        label_selector("app in web")
    assert caught.value.code == 400
