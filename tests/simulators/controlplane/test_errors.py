"""API errors as kube-apiserver's Status objects: code, reason and details the client reads."""

from __future__ import annotations

from proxyfleet.simulators.controlplane.errors import already_exists, conflict, gone, invalid, not_found


def test_not_found_names_the_resource() -> None:
    status = not_found("configmaps", "trusted-ca").status()
    assert (status["kind"], status["status"], status["code"], status["reason"]) == ("Status", "Failure", 404, "NotFound")
    assert status["details"]["name"] == "trusted-ca" and status["details"]["kind"] == "configmaps"
    assert status["message"] == 'configmaps "trusted-ca" not found'


def test_codes_and_reasons() -> None:
    assert (already_exists("nodes", "a").code, already_exists("nodes", "a").reason) == (409, "AlreadyExists")
    assert (conflict("nodes", "a").code, conflict("nodes", "a").reason) == (409, "Conflict")
    assert (gone("too old").code, gone("too old").reason) == (410, "Expired")


def test_invalid_lists_each_cause() -> None:
    error = invalid("Proxy", "cluster", "config.openshift.io", [("spec.httpProxy", "FieldValueInvalid", "bad URL")])
    status = error.status()
    assert status["code"] == 422 and status["reason"] == "Invalid"
    assert status["details"]["causes"] == [{"reason": "FieldValueInvalid", "message": "bad URL", "field": "spec.httpProxy"}]
