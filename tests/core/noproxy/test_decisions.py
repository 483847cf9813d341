"""Redacting proxy credentials in URLs and free text, and a decision's JSON that never shows them."""

from __future__ import annotations

from proxyfleet.core.noproxy import CLIENTS
from proxyfleet.core.noproxy.decisions import Decision, redact_text, redact_url


def test_credentials_are_redacted() -> None:
    assert redact_url("http://user:s3cret@p.corp:3128") == "http://***:***@p.corp:3128"
    assert redact_url("http://token@p.corp:3128") == "http://***@p.corp:3128"
    assert redact_url("http://p.corp:3128") == "http://p.corp:3128"
    assert "s3cret" not in redact_text("failed via http://user:s3cret@p.corp:3128/ today")
    # A password may hold "@": Go takes the userinfo up to the last "@" of the authority.
    assert redact_url("http://user:s3cr@TAIL@proxy:3128") == "http://***:***@proxy:3128"
    assert redact_text('url "http://user:s3cr@TAIL@proxy:3128/x?q=a@b" mail me@corp') == \
        'url "http://***:***@proxy:3128/x?q=a@b" mail me@corp'
    assert redact_text("http://o'brien:pa$(x)@p2:8080 and http://u:v@p3:1") == \
        "http://***:***@p2:8080 and http://***:***@p3:1"
    decision = CLIENTS["go"].decide({"HTTPS_PROXY": "http://user:s3cret@p.corp:3128"}, "https://quay.io/")
    assert "s3cret" not in str(decision.as_json())


def test_a_decision_as_json_redacts_proxy_and_reason() -> None:
    decision = Decision("https://quay.io/", "curl", "proxy", "http://u:pw1@p:3128",
                        "https_proxy=http://u:pw1@p:3128 applies", "https_proxy")
    shown = decision.as_json()
    assert shown["proxy"] == "http://***:***@p:3128"
    assert "pw1" not in str(shown) and shown["decision"] == "proxy"
