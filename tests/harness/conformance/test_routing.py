"""A lab probe's route judged from the node's own records and the origin's, for any proxy — and,
when it is wrong, said in a proxy vendor's terms."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from proxyfleet.harness.conformance.expectations import Route
from proxyfleet.harness.conformance.routing import ProbeEvidence, judge
from proxyfleet.simulators.egress.records import EgressRecord

NODE = "127.10.0.1"
PROXY = "proxy.corp.internal:3128"
PROXIED = Route(f"http://{PROXY}", "HTTPS_PROXY applies")
DIRECT = Route(None, "in NO_PROXY")
IMAGE = "quay.io/openshift/windows-test:latest"
HTTP_URL = "http://ctldl.windowsupdate.com/"
ORIGIN_CA = "O=proxyfleet public roots"
PROXY_CA = "O=acme proxy"
EGRESS = "127.20.1.2"
T0 = dt.datetime(2026, 11, 25, 12, 0, tzinfo=dt.UTC)


def request(url: str = "https://quay.io/v2/openshift/windows-test/manifests/pf-0123456789ab", *,
            mode: str = "connect", proxy: str | None = PROXY, **fields: object) -> EgressRecord:
    base: dict[str, object] = {"time": T0, "source": NODE, "client": "containerd", "session": 7, "method": "HEAD",
                               "url": url, "mode": mode, "proxy": proxy if mode != "direct" else None,
                               "proxy_endpoint": "127.20.1.1:3128" if mode != "direct" else None,
                               "local_port": 40000, "credentials_sent": False,
                               "connect_status": 200 if mode == "connect" else None,
                               "issuer": ORIGIN_CA if url.startswith("https") else None, "status": 200}
    base.update(fields)
    return EgressRecord(**base)  # type: ignore[arg-type]


def seen(*requests: EgressRecord, ok: bool = True, output: str = "", arrived: tuple[str, ...] = (EGRESS,),
         **fields: object) -> ProbeEvidence:
    evidence = ProbeEvidence(ok=ok, output=output, node=NODE, requests=requests, arrived_from=arrived, refused=0,
                             foreign_refusals=(), origin_issuer=ORIGIN_CA, egress=EGRESS, firewalled=True)
    return dataclasses.replace(evidence, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(("evidence", "says"), [
    # a tunnel: CONNECT answered, the origin's own certificate on the node, the origin saw the proxy
    (seen(request()), "through the proxy, tunnelled, origin certificate"),
    # interception is what the node was shown, whatever the proxy's log says (or whether it has one)
    (seen(request(issuer=PROXY_CA)), "through the proxy, MITM certificate trusted"),
    (seen(request(HTTP_URL + "?proxyfleet-probe=pf-0123456789ab", mode="absolute-form", client="curl")),
     "through the proxy (plain HTTP, absolute-form request)"),
])
def test_a_probe_carried_by_the_named_proxy_passes_whatever_proxy_it_is(evidence: ProbeEvidence, says: str) -> None:
    verdict = judge(IMAGE, "pull", PROXIED, evidence)
    assert verdict.ok and verdict.observed == says


def test_what_the_proxys_own_log_says_is_only_added_to_a_failure() -> None:
    logged = "the proxy logged CONNECT quay.io:443 → 407 (TCP_DENIED)"
    refused = seen(request(connect_status=407, error_kind="proxy-status", issuer=None, status=None), ok=False,
                   arrived=(), proxy_logged=logged)
    assert judge(IMAGE, "pull", PROXIED, refused).observed.endswith(f"; {logged}")
    # a pass says how the node was carried, whether the proxy logs or not (its format unknown, no log)
    assert judge(IMAGE, "pull", PROXIED, seen(request(), proxy_logged=logged)).observed == \
        "through the proxy, tunnelled, origin certificate"


@pytest.mark.parametrize(("evidence", "says"), [
    (seen(request(mode="direct"), arrived=(NODE,)), "1 request(s) went direct, not through proxy.corp.internal:3128"),
    (seen(request(proxy="proxy2.corp.internal:8080")), "went through proxy2.corp.internal:8080, not"),
    (seen(request(), arrived=(NODE,)), "the origin saw the request from the node itself"),
    (seen(request(), arrived=()), "the origin never saw the request"),
    (seen(ok=False, output="no such host"), "the node's client made no request"),
])
def test_a_route_other_than_the_named_proxy_fails_saying_so(evidence: ProbeEvidence, says: str) -> None:
    verdict = judge(IMAGE, "pull", PROXIED, evidence)
    assert not verdict.ok and says in verdict.observed, verdict.observed


def test_a_proxy_that_cannot_reach_the_lab_is_told_what_to_change() -> None:
    # it answered 5xx and the origin never saw the request: it could not resolve the lab's names
    unresolved = seen(request(connect_status=502, connect_reason="Bad Gateway", error_kind="proxy-status",
                              issuer=None, status=None), ok=False, arrived=())
    verdict = judge(IMAGE, "pull", PROXIED, unresolved)
    assert not verdict.ok
    assert ("the proxy answered 502 and the origin never saw the request: your proxy could not reach quay.io: it "
            "must resolve the lab's names through {hosts_file} (or run with --proxy-etc-hosts)") in verdict.observed
    # …and the firewall refused a connection from an address that is not a node's: the wrong egress
    wrong_egress = dataclasses.replace(unresolved, foreign_refusals=("127.20.1.1", "127.20.1.1"))
    verdict = judge(IMAGE, "pull", PROXIED, wrong_egress)
    assert ("the proxy answered 502 and the origin never saw the request: the egress firewall refused your proxy's "
            "connection from 127.20.1.1; the internet origins accept only 127.20.1.2 ({egress_address}; a proxy that "
            "cannot choose its outgoing address: --proxy-unbound-egress)") in verdict.observed
    # a tunnelling proxy answers the CONNECT first; the firewall then resets its connection upstream
    tunnelled = seen(request(error_kind="reset", issuer=None, status=None), ok=False, arrived=(),
                     foreign_refusals=("127.0.0.1",))
    assert ("the origin never saw the request: the egress firewall refused your proxy's connection from 127.0.0.1"
            in judge(IMAGE, "pull", PROXIED, tunnelled).observed)
    # plain HTTP: the proxy's own 5xx answer to the absolute-form request
    plain = seen(request(HTTP_URL + "?proxyfleet-probe=pf-0123456789ab", mode="absolute-form", status=503),
                 ok=False, arrived=())
    assert "the proxy answered 503 and the origin never saw the request" in judge(HTTP_URL, "fetch", PROXIED,
                                                                                   plain).observed


@pytest.mark.parametrize(("fields", "says"), [
    ({"proxy_authenticate": ("NTLM", "Negotiate")},
     "the proxy answered 407 offering only NTLM/Negotiate authentication; the nodes' proxy variables carry Basic "
     "credentials only"),
    ({"proxy_authenticate": ("Basic",), "credentials_sent": True},
     "the proxy answered 407: it refused the credentials the node sent"),
    ({"proxy_authenticate": ("Basic",)}, "the proxy answered 407: it wants credentials and the proxy URL has none"),
])
def test_a_refused_authentication_is_named(fields: dict[str, object], says: str) -> None:
    refused = seen(request(connect_status=407, connect_reason="Proxy Authentication Required",
                           error_kind="proxy-status", issuer=None, status=None, **fields), ok=False, arrived=())
    verdict = judge(IMAGE, "pull", PROXIED, refused)
    assert not verdict.ok and says in verdict.observed


def test_a_401_from_a_proxy_is_read_as_a_refused_authentication() -> None:
    wrong = seen(request(HTTP_URL + "?proxyfleet-probe=pf-0123456789ab", mode="absolute-form", status=401,
                         credentials_sent=True), ok=False, arrived=())
    assert "the proxy answered 401 (a proxy's challenge is 407): it refused the credentials the node sent" in \
        judge(HTTP_URL, "fetch", PROXIED, wrong).observed


def test_a_connect_refused_for_its_port_names_the_port() -> None:
    refused = seen(request("https://registry.acme.example:8443/v2/x/manifests/pf-0123456789ab", connect_status=403,
                           connect_reason="Forbidden", error_kind="proxy-status", issuer=None, status=None),
                   ok=False, arrived=())
    verdict = judge("registry.acme.example:8443/x:1", "pull", PROXIED, refused)
    assert ("the proxy refused CONNECT to registry.acme.example:8443 (403 Forbidden): it must allow CONNECT to "
            "registry.acme.example on port 8443") in verdict.observed
    denied = seen(request(HTTP_URL + "?proxyfleet-probe=pf-0123456789ab", mode="absolute-form", status=403),
                  ok=False, arrived=())
    assert ("the proxy refused the request for ctldl.windowsupdate.com (403) and the origin never saw it: it must "
            "forward plain HTTP to ctldl.windowsupdate.com") in judge(HTTP_URL, "fetch", PROXIED, denied).observed


def test_an_interception_ca_the_node_does_not_trust_is_named() -> None:
    untrusted = seen(request(issuer=PROXY_CA, error_kind="tls-unknown-authority", status=None,
                             error="x509: certificate signed by unknown authority"), ok=False, arrived=())
    verdict = judge(IMAGE, "pull", PROXIED, untrusted)
    assert not verdict.ok and "does not trust the certificate it was shown for quay.io, issued by O=acme proxy" \
        in verdict.observed


def test_with_the_proxy_down_the_probe_fails_connecting_to_it_and_nothing_goes_direct() -> None:
    down = request(error_kind="proxy-refused", connect_status=None, issuer=None, status=None)
    assert judge(IMAGE, "pull", PROXIED, seen(down, ok=False, arrived=(), proxy_down=True)).ok
    went_direct = seen(down, request(mode="direct", error_kind="reset", status=None), ok=False, arrived=(),
                       refused=1, proxy_down=True)
    assert not judge(IMAGE, "pull", PROXIED, went_direct).ok
    assert not judge(IMAGE, "pull", PROXIED, seen(request(), proxy_down=True)).ok  # it worked: through what?


def test_a_direct_route_behind_the_firewall_must_be_refused_there() -> None:
    refused = seen(request(mode="direct", error_kind="reset", issuer=None, status=None), ok=False, arrived=(),
                   refused=1)
    verdict = judge(IMAGE, "pull", DIRECT, refused)
    assert verdict.ok and verdict.observed == "direct, refused by the egress firewall"
    guessed = judge(IMAGE, "pull", DIRECT, seen(request()))  # the node took a proxy of its own
    assert not guessed.ok and "went through proxy.corp.internal:3128, though the cluster's NO_PROXY sends it " \
        "direct (in NO_PROXY)" in guessed.observed
    unexplained = judge(IMAGE, "pull", DIRECT, seen(request(mode="direct", error_kind="timeout"), ok=False, arrived=()))
    assert not unexplained.ok  # failed, but not at the firewall


def test_a_direct_route_on_an_open_network_must_reach_the_origin_from_the_node() -> None:
    open_network = seen(request(mode="direct"), arrived=(NODE,), firewalled=False)
    assert judge(IMAGE, "pull", DIRECT, open_network).observed == "direct, the origin saw the node"
    assert not judge(IMAGE, "pull", DIRECT, dataclasses.replace(open_network, arrived_from=())).ok
