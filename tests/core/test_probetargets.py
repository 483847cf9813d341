"""What a traffic probe may carry: an http(s) URL of RFC 3986 characters without credentials, an
image reference containerd reads — anything else refused saying why, before it reaches a node."""

from __future__ import annotations

import pytest

from proxyfleet.core.probetargets import MAX_URL, ProbeTargetError, check_image, check_url


@pytest.mark.parametrize("url", [
    "http://ctldl.windowsupdate.com/", "https://quay.io/v2/", "HTTPS://Site.Example:8443/a%20b?x=1&y=2#top",
    "http://10.0.5.20/", "http://[fd00::1]:8080/p", "https://site.example/it's;a=(1)+2,~*!$@",
])
def test_urls_of_rfc_3986_characters_are_carried(url: str) -> None:
    assert check_url(url) == url


@pytest.mark.parametrize(("url", "message"), [
    ("http://site.example/?a=1&echo x>C:\\k\\f.txt", r"' ' \(position 30\) is not a URL character"),
    ('http://site.example/"x', "'\"' .* is not a URL character"),
    ("http://site.example/a\\b", r"'\\\\' .* is not a URL character"),
    ("http://site.example/\x1b[31m", r"'\\x1b' .* is not a URL character"),
    ("http://site.example/\n", r"'\\n' .* is not a URL character"),
    ("http://site.example/\u2019", "is not a URL character"),
    ("http://site.example/{a,b}", "'{' .* is not a URL character"),
    ("http://site.example/[1-9]", "'\\[' and '\\]' only around an IPv6 address"),
    ("http://si[te].example/", "not a URL"),
    ("http://[fd00::1/", "not a URL"),
    ("http://site.example/%zz", "must start a percent-encoding"),
    ("http://user:secret@site.example/", "a URL with credentials"),
    ("ftp://site.example/", "expected an http:// \\(or https://\\) URL"),
    ("site.example/x", "expected an http://"),
    ("-http://site.example/", "expected an http://"),
    ("http:///path", "with a host"),
    ("http://site.example:99999/", "not a URL"),
    ("http://site.example:0/", "not a number from 1 to 65535"),
    ("", "expected an http://"),
    ("http://site.example/" + "a" * MAX_URL, f"longer than {MAX_URL} characters"),
])
def test_what_a_probe_cannot_carry_is_refused_saying_why(url: str, message: str) -> None:
    with pytest.raises(ProbeTargetError, match=message) as refused:
        check_url(url)
    assert "secret" not in str(refused.value) and "\n" not in str(refused.value)


def test_images_are_those_containerd_reads_and_nothing_more() -> None:
    assert str(check_image("quay.io/openshift/windows-test:latest")) == "quay.io/openshift/windows-test:latest"
    assert check_image("[fd00::1]:5000/corp/agent:1").registry == "[fd00::1]:5000"
    # parse_image's own pattern lets a trailing newline through ("$"), and a leading "-" in a host
    for text in ("quay.io/a:1\n", "-x.example/a:1", "quay.io/a:1 --creds=x", "Quay.io/UPPER:x"):
        with pytest.raises(ProbeTargetError, match="invalid reference format"):
            check_image(text)
