"""A lab probe's route judged from evidence the lab owns, for any proxy (DESIGN.md §10): what the
node's client recorded of each request (which proxy it dialled, CONNECT or absolute-form, what the
proxy answered, the certificate it was shown), what the destination's origin received carrying the
probe's id and from where, and what the egress firewall refused. A proxy's own log is never asked;
where the lab can read one, what it says is only added to a failure's text.

When the route is wrong, the text says why in a proxy vendor's terms, from that evidence: the proxy
answered 5xx and the origin never saw the request (it could not resolve or reach the lab's names),
the firewall refused a connection from the proxy's address (it did not leave from the egress
address), a 407 offering only NTLM/Negotiate (the nodes send Basic credentials only), a CONNECT
refused (which port).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass

from proxyfleet.core.noproxy import redact_text
from proxyfleet.harness.conformance.checks import Verdict, last_line
from proxyfleet.harness.conformance.expectations import Route
from proxyfleet.simulators.egress.records import EgressRecord

# Where a vendor's proxy finds the lab's names, and leaves from: the words of its diagnostics.
RESOLVE_HINT = "it must resolve the lab's names through {hosts_file} (or run with --proxy-etc-hosts)"
EGRESS_HINT = ("the internet origins accept only {egress} ({{egress_address}}; a proxy that cannot choose its "
               "outgoing address: --proxy-unbound-egress)")


@dataclass(frozen=True)
class ProbeEvidence:
    """One probe (a pull or a fetch by one node) as the lab saw it."""

    ok: bool  # the program's own exit status
    output: str
    node: str  # the node's address
    requests: tuple[EgressRecord, ...]  # what its client recorded, in order (one invocation)
    arrived_from: tuple[str, ...]  # the sources the destination's origin saw the probe's requests from
    refused: int  # the firewall's refusals of this probe's direct connections (matched by source port)
    foreign_refusals: tuple[str, ...]  # other sources the firewall refused at that origin in the step
    origin_issuer: str  # who issues the origins' own certificates
    egress: str = ""  # the address the internet origins accept (the proxy's egress)
    firewalled: bool = False  # a direct connection there is refused by the egress firewall
    proxy_down: bool = False  # the lab stopped the proxy the route names (a faults step)
    proxy_logged: str = ""  # what the proxy's own log says of it, where the lab can read one (enrichment)


def _authority(proxy_url: str) -> str:
    parts = urllib.parse.urlsplit(proxy_url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _outcome(action: str, seen: ProbeEvidence) -> str:
    return f"{action} {'succeeded' if seen.ok else 'failed'} ({redact_text(last_line(seen.output))})"


def _with_log(text: str, seen: ProbeEvidence) -> str:
    """A failure's text with what the proxy's own log says, where the lab can read one (a pass
    says how the node was carried; the report's flow summary has every proxy's log)."""
    return f"{text}; {seen.proxy_logged}" if seen.proxy_logged else text


def judge(what: str, action: str, route: Route, seen: ProbeEvidence) -> Verdict:
    """The probe took the route its client's NO_PROXY reading decides (``route``): through the named
    proxy — every request the client made went to it, the origin saw the probe only from elsewhere
    than the node — or direct, seen by the origin from the node, or refused at a closed firewall.
    With the named proxy down, the probe fails connecting to it and nothing goes direct."""
    if route.proxy is not None:
        return _through(what, action, route, _authority(route.proxy), seen)
    return _direct(what, action, route, seen)


def _through(what: str, action: str, route: Route, proxy: str, seen: ProbeEvidence) -> Verdict:
    requests = seen.requests
    direct = [r for r in requests if not r.through_proxy]
    elsewhere = sorted({r.proxy or "?" for r in requests if r.through_proxy and r.proxy != proxy})
    if seen.proxy_down:
        refused = [r for r in requests if r.error_kind in ("proxy-refused", "proxy-reset")]
        ok = not seen.ok and bool(requests) and len(refused) == len(requests) and not seen.arrived_from \
            and not seen.refused
        return Verdict(ok, f"{what} {route.describe()}, which is down: the {action} fails saying so, nothing direct",
                       f"failed: the proxy is down ({redact_text(last_line(seen.output))})" if ok else
                       f"{_outcome(action, seen)}; {len(direct)} direct request(s); origin saw it from "
                       f"{', '.join(seen.arrived_from) or 'nowhere'}")
    expected = f"{what} {route.describe()} (origin sees only the proxy)"
    from_node = seen.node in seen.arrived_from
    ok = seen.ok and bool(requests) and not direct and not elsewhere and bool(seen.arrived_from) and not from_node
    if ok:
        return Verdict(True, expected, _carried(requests, seen))
    return Verdict(False, expected, _with_log(f"{_outcome(action, seen)}; "
                                              f"{_why_not_through(proxy, route, seen, direct, elsewhere)}", seen))


def _carried(requests: Sequence[EgressRecord], seen: ProbeEvidence) -> str:
    """How the proxy carried it, from the node's side: an absolute-form request (plain HTTP), or a
    tunnel whose certificate was the origin's own (tunnelled) or someone else's (intercepted)."""
    if all(r.mode == "absolute-form" for r in requests):
        return "through the proxy (plain HTTP, absolute-form request)"
    issuers = {r.issuer for r in requests if r.issuer}
    if issuers and issuers <= {seen.origin_issuer}:
        return "through the proxy, tunnelled, origin certificate"
    return "through the proxy, MITM certificate trusted"


def _why_not_through(proxy: str, route: Route, seen: ProbeEvidence, direct: list[EgressRecord],
                     elsewhere: list[str]) -> str:
    """The first thing the evidence shows going wrong, in a proxy vendor's terms."""
    if not seen.requests:
        return "the node's client made no request (it failed before connecting)"
    if direct:
        refused = f", refused by the egress firewall {seen.refused} time(s)" if seen.refused else ""
        return f"{len(direct)} request(s) went direct, not through {proxy}{refused}"
    if elsewhere:
        return f"went through {', '.join(elsewhere)}, not {proxy}"
    if seen.node in seen.arrived_from:
        return "the origin saw the request from the node itself"
    first = seen.requests[0]
    connect = first.connect_status
    answered = connect if connect is not None and not 200 <= connect < 300 else (
        first.status if first.mode == "absolute-form" else None)
    target = urllib.parse.urlsplit(first.url)
    host, port = target.hostname or "?", target.port or (443 if target.scheme == "https" else 80)
    if answered == 407:
        schemes = first.proxy_authenticate
        if schemes and not any(s.lower() == "basic" for s in schemes):
            return (f"the proxy answered 407 offering only {'/'.join(schemes)} authentication; the nodes' proxy "
                    "variables carry Basic credentials only: the proxy must accept Basic")
        if first.credentials_sent:
            return "the proxy answered 407: it refused the credentials the node sent"
        return "the proxy answered 407: it wants credentials and the proxy URL has none"
    if answered == 401 and not seen.arrived_from:
        # tinyproxy 1.11 answers a wrong password so; a proxy's own challenge is 407
        said = "refused the credentials the node sent" if first.credentials_sent else "wants credentials"
        return f"the proxy answered 401 (a proxy's challenge is 407): it {said}"
    if connect is not None and 400 <= connect < 500:
        return (f"the proxy refused CONNECT to {host}:{port} ({connect} {first.connect_reason or ''}".rstrip()
                + f"): it must allow CONNECT to {host} on port {port}")
    if answered is not None and 400 <= answered < 500 and not seen.arrived_from:
        return (f"the proxy refused the request for {host} ({answered}) and the origin never saw it: it must "
                f"forward plain HTTP to {host}")
    failed_upstream = answered is not None and answered >= 500
    if not seen.arrived_from and seen.foreign_refusals:
        # The firewall refused someone who is not a node at that origin: the proxy, leaving from an
        # address the internet origins do not accept (its CONNECT may even have been answered 200).
        egress = EGRESS_HINT.format(egress=seen.egress or "the egress address")
        return ((f"the proxy answered {answered} and " if failed_upstream else "")
                + f"the origin never saw the request: the egress firewall refused your proxy's connection from "
                f"{', '.join(sorted(set(seen.foreign_refusals)))}; {egress}")
    if failed_upstream and not seen.arrived_from:
        return (f"the proxy answered {answered} and the origin never saw the request: your proxy could not "
                f"reach {host}: {RESOLVE_HINT}")
    failed = next((r for r in seen.requests if r.error_kind), None)
    if failed is not None and failed.error_kind == "tls-unknown-authority":
        return (f"the node does not trust the certificate it was shown for {host}"
                + (f", issued by {failed.issuer}" if failed.issuer else "") + " (x509: certificate signed by "
                "unknown authority): the proxy intercepts with a CA the node has not imported")
    if failed is not None and failed.error_kind in ("proxy-refused", "proxy-reset", "proxy-dns"):
        return f"the node could not reach the proxy {proxy}: {redact_text(failed.error or '')}"
    if not seen.arrived_from:
        return f"{len(seen.requests)} request(s) to {proxy}; the origin never saw the request"
    return f"{len(seen.requests)} request(s) to {proxy}; the origin saw it from {', '.join(seen.arrived_from)}"


def _direct(what: str, action: str, route: Route, seen: ProbeEvidence) -> Verdict:
    proxied = sorted({r.proxy or "?" for r in seen.requests if r.through_proxy})
    if seen.firewalled:
        # No proxy for this destination in a network that demands one: the node must try directly
        # and be refused at the firewall.
        ok = not seen.ok and bool(seen.refused) and not proxied
        return Verdict(ok, f"{what} direct, refused by the egress firewall (no proxy for it)",
                       "direct, refused by the egress firewall" if ok else
                       f"{_outcome(action, seen)}; " + (
                           f"went through {', '.join(proxied)}, though the cluster's NO_PROXY sends it direct "
                           f"({route.reason})" if proxied else
                           f"{seen.refused} refusal(s) at the firewall; origin saw it from "
                           f"{', '.join(seen.arrived_from) or 'nowhere'}"))
    ok = seen.ok and not proxied and seen.node in seen.arrived_from
    return Verdict(ok, f"{what} direct (no proxy, origin sees the node)",
                   "direct, the origin saw the node" if ok else
                   f"{_outcome(action, seen)}; " + (
                       f"went through {', '.join(proxied)}, though the cluster's NO_PROXY sends it direct "
                       f"({route.reason})" if proxied else
                       f"origin saw it from {', '.join(seen.arrived_from) or 'nowhere'}"))
