"""The node target is computed from the cluster alone: Proxy status, the merged bundle, Go's rules."""

import trustme

from proxyfleet.harness.conformance.expectations import Expected, expected_from, status_matches_spec

URL = "http://proxy.corp.internal:3128"


def _proxy(spec: dict[str, str], status: dict[str, str]) -> dict[str, object]:
    return {"spec": spec, "status": status}


def test_a_configured_proxy_gives_status_values_and_the_bundle() -> None:
    ca = trustme.CA()
    expected = expected_from(_proxy({"httpsProxy": URL}, {"httpProxy": URL, "httpsProxy": URL,
                                                          "noProxy": ".svc,registry.corp.internal"}),
                             ca.cert_pem.bytes().decode())
    assert expected.configured
    assert expected.environment == {"HTTP_PROXY": URL, "HTTPS_PROXY": URL, "NO_PROXY": ".svc,registry.corp.internal"}
    assert len(expected.bundle) == 1
    assert expected.route("https://quay.io/v2/").proxy == URL
    assert expected.route("https://registry.corp.internal/v2/").proxy is None


def test_no_proxy_means_no_variables_and_no_certificates_even_with_a_bundle() -> None:
    expected = expected_from(_proxy({}, {"noProxy": ".svc"}), trustme.CA().cert_pem.bytes().decode())
    assert not expected.configured
    assert expected.environment == {"HTTP_PROXY": None, "HTTPS_PROXY": None, "NO_PROXY": None}
    assert expected.bundle == {}
    assert expected.route("https://quay.io/v2/").proxy is None


def test_status_must_catch_up_with_the_spec() -> None:
    behind = expected_from(_proxy({"httpsProxy": "http://new:1"}, {"httpsProxy": URL}), "")
    assert not status_matches_spec(behind)
    missing_entry = expected_from(_proxy({"httpsProxy": URL, "noProxy": "a.example"},
                                         {"httpsProxy": URL, "noProxy": ".svc"}), "")
    assert not status_matches_spec(missing_entry)
    caught_up = expected_from(_proxy({"httpsProxy": URL, "noProxy": "a.example"},
                                     {"httpsProxy": URL, "noProxy": ".svc,a.example"}), "")
    assert status_matches_spec(caught_up)


def test_changing_only_the_bundle_changes_the_node_target() -> None:
    status = {"httpsProxy": URL}
    first = trustme.CA().cert_pem.bytes().decode()
    one = expected_from(_proxy(status, status), first)
    assert one.node_target() == expected_from(_proxy(status, status), first).node_target()
    assert one.node_target() != expected_from(_proxy(status, status), trustme.CA().cert_pem.bytes().decode()).node_target()


def test_routes_read_variable_names_case_insensitively_as_windows_does() -> None:
    # curl never reads an upper-case HTTP_PROXY on Linux; on Windows it finds it as http_proxy
    target = Expected({"HTTP_PROXY": "http://p2:8080", "HTTPS_PROXY": "http://p1:3128", "NO_PROXY": None}, {}, {})
    assert target.route("http://ctldl.windowsupdate.com/", "curl").proxy == "http://p2:8080"
    assert target.route("https://quay.io/v2/", "curl").proxy == "http://p1:3128"
