"""The pure check functions: case-insensitive variable names as Windows reads them."""

from __future__ import annotations

from proxyfleet.harness.conformance.checks import env_text, proxy_variables, service_environment_problems

EXPECTED = {"HTTP_PROXY": "http://p:3128", "HTTPS_PROXY": "http://p:3128", "NO_PROXY": ".svc"}


def test_variable_names_compare_the_way_windows_does() -> None:
    lower = {"http_proxy": "http://p:3128", "Https_Proxy": "http://p:3128", "no_proxy": ".svc", "Path": "C:\\"}
    assert proxy_variables(lower) == EXPECTED
    assert service_environment_problems({"containerd": lower, "kubelet": EXPECTED}, EXPECTED) == []


def test_wrong_missing_and_stopped_services_are_named() -> None:
    problems = service_environment_problems(
        {"containerd": {"HTTP_PROXY": "http://p:3128"}, "kubelet": None,
         "kube-proxy": {**EXPECTED, "NO_PROXY": ".svc;.cluster.local"}}, EXPECTED)
    assert problems[0].startswith("containerd: HTTP_PROXY='http://p:3128', HTTPS_PROXY=unset")
    assert problems[1] == "kubelet not running"
    assert "NO_PROXY='.svc;.cluster.local'" in problems[2]


def test_reports_never_show_credentials() -> None:
    assert "pw" not in env_text({"HTTPS_PROXY": "http://u:pw@p:3128", "NO_PROXY": None})
