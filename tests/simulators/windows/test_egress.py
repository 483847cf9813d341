"""The node's own clients' parsing (their traffic is tested end to end in test_traffic): image
references as containerd resolves them, curl.exe's options with curl's own usage errors, ``--``
ending curl's and crictl's options, and --write-out templates."""

from __future__ import annotations

import pytest

from proxyfleet.simulators.windows.egress import CurlUsage, _write_out, parse_curl_arguments
from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


def test_curl_options_short_long_and_bundled() -> None:
    options, urls = parse_curl_arguments(["-sSf", "-o", "NUL", "-w%{http_code}", "--noproxy", "*",
                                          "-H", "A: b", "--header", "C: d", "https://quay.io/v2/"])
    assert urls == ["https://quay.io/v2/"]
    assert options["silent"] and options["show-error"] and options["fail"]
    assert (options["output"], options["write-out"], options["noproxy"]) == ("NUL", "%{http_code}", "*")
    assert options["header"] == ["A: b", "C: d"]


@pytest.mark.parametrize(("args", "message"), [
    (["--bogus"], "option --bogus: is unknown"), (["-Z"], "option -Z: is unknown"),
    (["-o"], "option -o: requires parameter"), (["--proxy"], "option --proxy: requires parameter"),
])
def test_curl_usage_errors_in_curls_words(args: list[str], message: str) -> None:
    with pytest.raises(CurlUsage, match=message):
        parse_curl_arguments(args)


def test_double_dash_ends_curls_options_and_crictls() -> None:
    options, urls = parse_curl_arguments(["-sS", "--", "-x", "http://a.example/"])
    assert urls == ["-x", "http://a.example/"] and "proxy" not in options  # curl: every later word is a URL


async def test_crictl_takes_every_word_after_double_dash_as_an_image(machine: WindowsMachine) -> None:
    operand = await ps(machine, "crictl.exe pull -- --creds")
    assert "parse reference '--creds': invalid reference format" in operand.stderr  # Go's flag parsing
    pulled = await ps(machine, "crictl.exe pull -- quay.io/a:1")
    assert "lookup quay.io: no such host" in pulled.stderr


def test_write_out_fills_known_variables_and_escapes() -> None:
    assert _write_out("%{http_code}\\n%{unknown}", {"http_code": 200}) == "200\n"


def test_a_failed_tls_to_an_https_proxy_reads_like_go_and_curl() -> None:
    from proxyfleet.simulators.egress.client import EgressError, EgressSession, trust_context
    from proxyfleet.simulators.windows.egress import _curl_failure, go_error

    session = EgressSession(None, "127.10.0.1", trust_context([]))
    error = EgressError("proxy-tls-unknown-authority", "self-signed")
    assert go_error(error, session, "quay.io", 443, "https://proxy.corp.internal:3128") == (
        "proxyconnect tcp: tls: failed to verify certificate: x509: certificate signed by unknown authority")
    code, text = _curl_failure(error, "quay.io", 443, "https://proxy.corp.internal:3128")
    assert code == 60 and "SEC_E_UNTRUSTED_ROOT" in text
    wrong_name = EgressError("proxy-tls-hostname", "mismatch")
    assert go_error(wrong_name, session, "quay.io", 443, "https://proxy.corp.internal:3128").endswith(
        "x509: certificate is not valid for proxy.corp.internal")
