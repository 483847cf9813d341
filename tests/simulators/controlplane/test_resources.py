"""The served types and their schemas: lookup by group/version/plural, strict-validation paths of
unknown fields, pruning, and type errors worded like kube-apiserver's."""

from __future__ import annotations

from proxyfleet.simulators.controlplane.resources import (
    CONFIGMAPS,
    PROXIES,
    find_type,
    prune,
    type_errors,
    types_in,
    unknown_fields,
)

SCHEMA = {"spec": {"httpProxy": "string", "readinessEndpoints": ["list", "string"], "replicas": "integer"},
          "metadata": "any"}


def test_types_are_found_by_group_version_and_plural() -> None:
    assert find_type("config.openshift.io", "v1", "proxies") is PROXIES
    assert find_type("", "v1", "configmaps") is CONFIGMAPS
    assert find_type("", "v1", "nope") is None
    assert PROXIES in types_in("config.openshift.io", "v1")
    assert PROXIES.api_version == "config.openshift.io/v1" and CONFIGMAPS.api_version == "v1"


def test_unknown_fields_and_pruning() -> None:
    value = {"spec": {"httpProxi": "x", "readinessEndpoints": ["a"]}, "metadata": {"anything": 1}, "extra": 1}
    assert unknown_fields(SCHEMA, value) == [".spec.httpProxi", ".extra"]
    assert prune(SCHEMA, value) == {"spec": {"readinessEndpoints": ["a"]}, "metadata": {"anything": 1}}


def test_type_errors_name_the_field_and_both_types() -> None:
    errors = type_errors(SCHEMA, {"spec": {"httpProxy": 5, "replicas": True, "readinessEndpoints": "x"}})
    assert [field for field, _, _ in errors] == ["spec.httpProxy", "spec.replicas", "spec.readinessEndpoints"]
    assert errors[0][2] == 'Invalid value: "integer": spec.httpProxy in body must be of type string: "integer"'
    assert type_errors(SCHEMA, {"spec": {"httpProxy": None}}) == []  # null is not a type error
