"""Check logic as pure functions of (expected, evidence), shared by the judge and its tests."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import re
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.core.contract import BUNDLE_KEY, INJECT_LABEL, PROXY_VARIABLES
from proxyfleet.core.noproxy import redact_text, redact_url
from proxyfleet.harness.conformance.expectations import Route


def env_text(environment: Mapping[str, str | None]) -> str:
    """``NAME='value'`` pairs for a report, credentials redacted."""
    return ", ".join(f"{k}={repr(redact_url(v)) if v is not None else 'unset'}" for k, v in environment.items())


def proxy_variables(environment: Mapping[str, str]) -> dict[str, str | None]:
    """The proxy variables of an environment block as Windows looks them up: names are
    case-insensitive, so a reconciler that writes ``http_proxy`` is as right as one that writes
    ``HTTP_PROXY``."""
    folded = {name.upper(): value for name, value in environment.items()}
    return {name: folded.get(name) for name in PROXY_VARIABLES}


def service_environment_problems(environments: Mapping[str, Mapping[str, str] | None],
                                 expected: Mapping[str, str | None]) -> list[str]:
    """Each egress service whose process environment (None: not running) lacks the expected
    proxy variables, described for a report."""
    problems = []
    for service, environment in environments.items():
        if environment is None:
            problems.append(f"{service} not running")
            continue
        seen = proxy_variables(environment)
        if seen != dict(expected):
            problems.append(f"{service}: {env_text(seen)}")
    return problems


# --- one pure function per check family: (expected, evidence) -> Verdict --------------------------


@dataclass(frozen=True)
class Verdict:
    """A check's outcome with the two short texts a report shows."""

    ok: bool
    expected: str
    observed: str
    skipped: bool = False  # the evidence the check needs is not there: neither passed nor failed
    # the evidence could be the lab's own starvation (its event loop stalled): neither passed nor
    # failed, reported with the measured lag
    inconclusive: bool = False

    @classmethod
    def skip(cls, expected: str, reason: str) -> Verdict:
        """A check that cannot be judged with the evidence at hand; ``reason`` says what is missing."""
        return cls(True, expected, reason, skipped=True)


def _subjects(thumbprints: Iterable[str], subjects: Mapping[str, str]) -> str:
    return ", ".join(f"{subjects.get(t, 'certificate')} ({t[:12]}…)" for t in sorted(thumbprints))


def _when(moment: dt.datetime | None) -> str:
    return moment.isoformat(timespec="milliseconds") if moment else "never"


def last_line(text: str) -> str:
    """The tail of a command's output (where an error names its cause), at most 240 characters."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][-240:] if lines else ""


def converged(problem: str | None, seconds: float | None, timeout: float) -> Verdict:
    """The node reached its target (and held it) before the deadline."""
    return Verdict(problem is None, f"settled within {timeout:g}s",
                   f"settled after {seconds:.2f}s" if problem is None and seconds is not None
                   else f"still off when the step ended: {problem}")


def registry_env(wanted: Mapping[str, str | None], seen: Mapping[str, str | None]) -> Verdict:
    """Machine proxy variables equal Proxy status byte for byte (unset without a proxy)."""
    return Verdict(dict(seen) == dict(wanted), env_text(wanted), env_text(seen))


def certificates(wanted: frozenset[str], root: frozenset[str], bundle_size: int,
                 wanted_subjects: Mapping[str, str], other_subjects: Mapping[str, str],
                 removed_while_kept: frozenset[str] = frozenset()) -> Verdict:
    """The Root store holds exactly the out-of-the-box roots plus the trusted bundle, and no
    certificate the target kept through the step was taken out meanwhile (``removed_while_kept``:
    removed during the step though wanted before and after it; put back later or not, clients
    failed in between)."""
    missing, extra = wanted - root, root - wanted
    ok = not missing and not extra and not removed_while_kept
    observed = "exactly those" if ok else "; ".join(filter(None, [
        f"missing {_subjects(missing, wanted_subjects)}" if missing else "",
        f"unexpected {_subjects(extra, other_subjects)}" if extra else "",
        f"removed during the step though the bundle kept it: {_subjects(removed_while_kept, wanted_subjects)}"
        if removed_while_kept else ""]))
    return Verdict(ok, f"baseline + {bundle_size} bundle certificate(s), none kept removed meanwhile", observed)


# What a step did to one node's target, for the restart and reboot checks:
#   "environment" — its proxy variables changed: every egress service must start anew;
#   "live"        — only its trust bundle changed, or it drifted out of band and was repaired:
#                   Windows reads the Root store live, so a restart is allowed, not required;
#   "none"        — nothing changed: no service may restart.
ChangeKind = Literal["environment", "live", "none"]


def services_restarted(kind: ChangeKind, services: Mapping[str, dt.datetime | None],
                       started: dt.datetime) -> Verdict:
    """After a change of this node's variables every egress service started anew; after none,
    none did; after a trust-bundle-only change (or a drift repair) either is right: the outcome
    (pulls trust the new CA, the old one is gone) is judged by the other checks."""
    since = started.isoformat(timespec="milliseconds")
    restarted = [s for s, t in services.items() if t is not None and t >= started]
    if kind == "environment":
        stale = [s for s, t in services.items() if t is None or t < started]
        return Verdict(not stale, f"every egress service started after {since}",
                       "all restarted" if not stale else
                       "not restarted: " + ", ".join(f"{s} (started {_when(services[s])})" for s in stale))
    if kind == "live":
        return Verdict(True, "a restart allowed, not required (trust bundle only, or a drift repair)",
                       "restarted: " + ", ".join(restarted) if restarted else "none restarted (applied live)")
    return Verdict(not restarted, "no restart (nothing changed on this node)",
                   "none restarted" if not restarted else "restarted: " + ", ".join(restarted))


def service_environment(environments: Mapping[str, Mapping[str, str] | None],
                        wanted: Mapping[str, str | None]) -> Verdict:
    """Every egress service runs with the proxy variables of Proxy status."""
    wrong = service_environment_problems(environments, wanted)
    return Verdict(not wrong, env_text(wanted), "every service" if not wrong else "; ".join(wrong[:3]))


@dataclass(frozen=True)
class PullEvidence:
    """What one pull or fetch against an existing cluster left behind: its result, and the flows the
    run's own proxy logged from the node to the destination's host (each marked whether it went
    through the proxy the cluster names)."""

    ok: bool
    output: str
    flows: tuple[tuple[bool, Mapping[str, Any]], ...] = ()


def outcome_only(what: str, action: str, route: Route, seen: PullEvidence, network_decides: bool) -> Verdict:
    """A pull or fetch judged without route evidence (an existing cluster whose proxy and origins
    are not the run's): a failure is a failure wherever the cluster sends it; a success is not proof
    of the route, so it is ``skipped`` saying so. A direct route to an internet destination is the
    network's to allow or refuse (``network_decides``), so neither outcome says anything."""
    expected = f"{what} {route.describe()} succeeds"
    outcome = f"{action} {'succeeded' if seen.ok else 'failed'} ({redact_text(last_line(seen.output))})"
    if network_decides:
        return Verdict.skip(f"{what} direct", f"{outcome}; needs lab evidence: whether this network lets a "
                                              "node reach the internet directly is the network's, not the cluster's")
    if not seen.ok:
        return Verdict(False, expected, outcome)
    return Verdict.skip(expected, f"{outcome}; which way it went is not observable: the proxy's and the "
                                  "origin's logs are not the run's (only the log of a proxy the run starts, "
                                  "--proxy-listen, shows a route on an existing cluster)")


def at_run_proxy(what: str, action: str, route: Route, seen: PullEvidence, through_run_proxy: bool,
                 network_decides: bool) -> Verdict:
    """An existing cluster's traffic judged by the log of the proxy the run started (``seen.flows``:
    the node's flows there to the destination). Through that proxy: the pull must succeed and the
    proxy must have carried it. Direct: nothing may reach that proxy, and the pull must succeed
    unless the network decides (an internet destination with no proxy for it). Through a proxy
    that is not the run's: judged by outcome only."""
    if route.proxy is not None and not through_run_proxy:
        return outcome_only(what, action, route, seen, network_decides=False)
    outcome = f"{action} {'succeeded' if seen.ok else 'failed'} ({redact_text(last_line(seen.output))})"
    flows = [f for _, f in seen.flows]
    if route.proxy is not None:
        # (tinyproxy logs no status: that it reached the origin is what its log says of success)
        carried = [f for f in flows if f["kind"] in ("request", "connect")
                   and (f.get("status") == 200 or (f.get("status") is None and f.get("origin_connected")))]
        intercepted = any(f["kind"] == "request" and f.get("intercepted") for f in carried)
        plain = any(f["kind"] == "request" and f.get("scheme") == "http" for f in carried)
        denied = sorted({_refusal(f, route) for f in flows if (f.get("status") or 0) >= 400})
        rejected = sum(1 for f in flows if f["kind"] == "tls-failed")
        ok = seen.ok and bool(carried)
        return Verdict(ok, f"{what} {route.describe()}: succeeds, carried by the run's proxy",
                       ("through the run's proxy, " + ("plain HTTP" if plain else "MITM certificate trusted"
                                                        if intercepted else "tunnelled"))
                       if ok else f"{outcome}; {len(carried)} flow(s) carried by the run's proxy; "
                       f"{rejected} rejected MITM handshake(s)" + (f"; the proxy answered {', '.join(denied)}"
                                                                   if denied else ""))
    if flows:
        return Verdict(False, f"{what} direct (no flow at the run's proxy)",
                       f"{outcome}; {len(flows)} flow(s) through the run's proxy, though the cluster's "
                       f"NO_PROXY sends it direct ({route.reason})")
    if network_decides:
        return Verdict.skip(f"{what} direct (no flow at the run's proxy)",
                            f"{outcome}, no flow at the run's proxy; needs lab evidence: whether this network lets "
                            "a node reach the internet directly is the network's, not the cluster's")
    return Verdict(seen.ok, f"{what} direct: succeeds, no flow at the run's proxy",
                   "direct, succeeded, nothing at the run's proxy (the origin's log is not the run's)"
                   if seen.ok else f"{outcome}; no flow at the run's proxy")


@dataclass(frozen=True)
class TrafficEvidence:
    """One pull's or fetch's evidence against an existing cluster and how much of its path it
    shows: ``run-proxy`` (the log of the proxy the run started: ``through_run_proxy``) or
    ``outcome`` (no log is the run's). ``network_decides``: a direct route to an internet
    destination on a network the run does not own, which may allow it or not. (The lab judges its
    own records instead: ``routing``.)"""

    seen: PullEvidence
    observed_by: Literal["run-proxy", "outcome"]
    through_run_proxy: bool = False
    network_decides: bool = False


def traffic(what: str, image: bool, route: Route, evidence: TrafficEvidence) -> Verdict:
    """One pull (``image``) or fetch judged on the route its client takes, by the evidence there is."""
    action = "pull" if image else "fetch"
    if evidence.observed_by == "run-proxy":
        return at_run_proxy(what, action, route, evidence.seen, evidence.through_run_proxy,
                            evidence.network_decides)
    return outcome_only(what, action, route, evidence.seen, network_decides=evidence.network_decides)


def all_of(verdicts: Sequence[Verdict]) -> Verdict:
    """Several verdicts as one check: it passes when each does; the texts list them all."""
    return Verdict(all(v.ok for v in verdicts), "; ".join(v.expected for v in verdicts),
                   "; ".join(v.observed for v in verdicts))


def _refusal(flow: Mapping[str, Any], route: Route) -> str:
    """A proxy's refusal in words: a 407 says whether credentials were sent at all."""
    status = flow.get("status")
    code = flow.get("squid_code") or flow.get("error") or "refused"
    if status == 407:
        sent = route.proxy is not None and urllib.parse.urlsplit(route.proxy).username is not None
        return (f"407 ({code}: the proxy refused the credentials the node sent)" if sent else
                f"407 ({code}: the proxy wants credentials and the proxy URL has none)")
    return f"{status} ({code})"


def leftover_files(found: frozenset[str], baseline: frozenset[str]) -> Verdict:
    """Without a proxy the node holds no file a reconciler left (bundle copies, per-certificate
    files, import records, data files): nothing beyond what it had before the scenario began."""
    left = sorted(found - baseline)
    return Verdict(not left, "no file beyond the node's own (bundle, certificates, records, data files removed)",
                   "none left" if not left else f"{len(left)} left: " + ", ".join(left[:4])
                   + (" …" if len(left) > 4 else ""))


NODE_NOT_READY = "Node not Ready"


def node_problem(node: Mapping[str, Any] | None, admin_cordoned: bool = False) -> str | None:
    """Why a Node object is not Ready and schedulable (None: it is). A Node the administrator
    cordoned must stay cordoned instead."""
    if node is None:
        return "no Node object"
    conditions = {c.get("type"): c for c in (node.get("status") or {}).get("conditions") or []}
    ready = conditions.get("Ready") or {}
    if ready.get("status") != "True":
        return f"{NODE_NOT_READY} ({ready.get('reason', 'no Ready condition')})"
    cordoned = bool((node.get("spec") or {}).get("unschedulable"))
    if cordoned and not admin_cordoned:
        return "Node cordoned"
    if admin_cordoned and not cordoned:
        return "the administrator's cordon was lost (Node schedulable)"
    return None


# A stall of the lab's own event loop this long can keep a simulated kubelet from renewing its lease
# on time (the lab's heartbeat period), which its Node then shows as Ready=Unknown.
STARVED_SECONDS = 1.0
# How the lab's clients say a pull or fetch ran out of time: containerd's Go (``TLS handshake
# timeout``, ``i/o timeout``), curl (``Operation timed out``), the SSH session's own limit.
TIMED_OUT = re.compile(r"timeout|timed out|no answer within", re.IGNORECASE)


def starved_traffic(verdict: Verdict, starved: float, attempts: int) -> Verdict:
    """A pull's, fetch's or look's verdict, unless it failed by running out of time while the lab's
    own event loop stalled ``starved`` seconds in all (the node's client and sshd, the origins and
    the kubelets are on that loop): that is the lab's slowness, not the node's, and is ``inconclusive``."""
    if verdict.ok or starved < STARVED_SECONDS:
        return verdict
    return Verdict(False, verdict.expected,
                   f"{verdict.observed} — it timed out while the lab's own event loop stalled {starved:.1f} s "
                   f"(attempt {attempts}, each again once the lab was calm or 30 s had passed): not judged",
                   inconclusive=True)


def lab_failed(verdict: Verdict, fault: str) -> Verdict:
    """A node's verdict, unless it failed on a node the lab itself failed (``fault``: say, the
    simulator could not finish its reboot and left it down): then ``inconclusive``, the fault named."""
    if verdict.ok or not fault:
        return verdict
    return Verdict(False, verdict.expected, f"{verdict.observed} — {fault}: not judged", inconclusive=True)


def node_ready(node: Mapping[str, Any] | None, api_flows: int | None, api_host: str,
               admin_cordoned: bool = False, starved: float = 0.0) -> Verdict:
    """The Node is Ready and schedulable (cordoned, when the administrator cordoned it), and no
    kubelet API request went through a proxy (``api_flows`` None: the proxy's log is not the run's,
    so only the Node is judged, and the expectation says so). A Node whose status went Unknown
    while the lab's own event loop stalled ``starved`` seconds (its kubelet is the lab's, on that
    loop) and whose kubelet sent nothing through a proxy is ``inconclusive``: the lab, not the
    reconciler, may have kept the kubelet silent."""
    problem = node_problem(node, admin_cordoned)
    ok = problem is None and not api_flows
    schedulable = "cordoned by the administrator" if admin_cordoned else "schedulable"
    traffic = (f"no kubelet traffic to {api_host} through a proxy" if api_flows is not None else
               "(kubelet traffic not judged: the proxy's log is not the run's)")
    expected = f"Ready, {schedulable}, {traffic}"
    if not ok and not api_flows and problem is not None and "NodeStatusUnknown" in problem \
            and starved >= STARVED_SECONDS:
        return Verdict(False, expected, f"{problem} while the lab's own event loop stalled up to {starved:.1f} s "
                                        "(the lab's kubelet may not have had its turn): not judged",
                       inconclusive=True)
    return Verdict(ok, expected, "Ready" if ok else (problem or f"{api_flows} API request(s) went through the proxy"))


@dataclass(frozen=True)
class Peak:
    """The most instances unavailable at one moment, which ones, and when."""

    count: int
    at: dt.datetime | None
    nodes: frozenset[str]


def peak_unavailable(intervals: Mapping[str, Iterable[tuple[dt.datetime, dt.datetime]]]) -> Peak:
    """The moment the most nodes were inside one of their intervals (a node counts once however
    many of its intervals overlap; an interval ending at the instant another begins does not
    overlap it)."""
    edges: list[tuple[dt.datetime, int, str]] = []
    for node, spans in intervals.items():
        for start, end in spans:
            if end > start:
                edges += [(start, 1, node), (end, -1, node)]
    edges.sort(key=lambda e: (e[0], e[1]))  # ends (-1) before starts at the same instant
    depth: dict[str, int] = {}
    best = Peak(0, None, frozenset())
    for time, change, node in edges:
        depth[node] = depth.get(node, 0) + change
        active = frozenset(n for n, d in depth.items() if d > 0)
        if len(active) > best.count:
            best = Peak(len(active), time, active)
    return best


def disruption_budget(address: str, budget: int, instances: int, down: Peak, cordoned: Peak,
                      admin_cordon_kept: bool | None, either: Peak | None = None) -> Verdict:
    """At no moment more instances down (machine unreachable) than maxUnavailable, nor more
    cordoned by the reconciler, nor more down-or-cordoned (``either``: a node stuck in its reboot
    keeps its slot while others are cordoned); a cordon the administrator set is still there
    afterwards (``admin_cordon_kept`` is None for a node the administrator did not cordon)."""
    expected = (f"at most {budget} of {instances} instance(s) down at once "
                f"and at most {budget} cordoned by the reconciler, or down or cordoned")
    if admin_cordon_kept is not None:
        expected += "; the administrator's cordon kept"
    problems = []
    peaks = [("down", down), ("cordoned by the reconciler", cordoned)]
    if either is not None:
        peaks.append(("down or cordoned by the reconciler", either))
    for what, peak in peaks:
        if peak.count > budget and address in peak.nodes:
            when = peak.at.strftime("%H:%M:%S.%f")[:-3] if peak.at else "?"
            problems.append(f"{peak.count} {what} at once at {when} ({', '.join(sorted(peak.nodes))})")
    if admin_cordon_kept is False:
        problems.append("the administrator's cordon was removed")
    if problems:
        return Verdict(False, expected, "; ".join(problems))
    return Verdict(True, expected, f"at most {down.count} down and {cordoned.count} cordoned at once"
                   + (f", {either.count} down or cordoned" if either is not None else ""))


def firewall_bypasses(refused: Iterable[str], origin_routes: Mapping[str, tuple[str, str]],
                      route: Callable[[str, str], Route]) -> list[str]:
    """The origins that refused a node's direct connection (``refused``) although the cluster sends
    the node there through a proxy (``route(url, client)``, for each origin's URL and client). One
    the cluster sends direct (no proxy yet, or in NO_PROXY) is the network's doing, judged by the
    traffic checks; an origin of unknown route counts."""
    return [o for o in refused if o not in origin_routes or route(*origin_routes[o]).proxy is not None]


def firewall(bypasses: list[str]) -> Verdict:
    """No direct connection to a destination the cluster sends through a proxy (``bypasses``: the
    origins that refused such a connection)."""
    return Verdict(not bypasses, "no direct connection where the cluster names a proxy",
                   "none" if not bypasses else f"{len(bypasses)} refused: " + ", ".join(sorted(set(bypasses))))


@dataclass(frozen=True)
class Change:
    """One write of the cluster's proxy settings: when it was issued, and when a watch saw it
    (published and delivered)."""

    issued: dt.datetime
    seen: dt.datetime


def overtaken(restarts: list[dt.datetime], first_restart: dt.datetime | None, changes: list[Change],
              margin: dt.timedelta) -> bool:
    """Whether a node's reboot was under way when a later change arrived: some change was issued
    after the step's first restart was asked for (``first_restart``; writes before any reboot are
    one change), and this node's restart was asked for (``restarts``) before that change could be
    acted on (seen + ``margin``)."""
    later = [c for c in changes if first_restart is not None and c.issued > first_restart]
    return bool(later) and any(restart < later[-1].seen + margin for restart in restarts)


def reboots(count: int, kind: ChangeKind, overtaken: bool = False) -> Verdict:
    """At most one reboot for a change (a live one may need none), none without one; one more
    when a later change overtook a reboot already under way (``overtaken``)."""
    limit = 0 if kind == "none" else 1
    what = {"environment": "variables changed", "live": "trust bundle changed or drift repaired",
            "none": "settings unchanged"}[kind]
    if overtaken and kind != "none":
        limit, what = 2, what + "; a second change arrived while it rebooted"
    return Verdict(count <= limit, f"at most {limit} ({what})", str(count))


@dataclass(frozen=True)
class OutageEvidence:
    """One reboot of a node: the lab's exact cordon state at its edges (None: not recorded, as on
    a real cluster) and what the Node watch saw in between."""

    at_down: bool | None
    at_up: bool | None
    timeline_ok: bool
    timeline_text: str


def drained(outages: list[OutageEvidence]) -> Verdict:
    """The Node was cordoned when the machine went down and still when it came back."""
    if not outages:
        return Verdict(True, "cordoned for every reboot", "no reboot")
    bad = []
    for outage in outages:
        exact = outage.at_down is not None or outage.at_up is not None
        if exact and outage.at_down is False:
            bad.append("schedulable when it went down")
        elif exact and outage.at_up is False:
            bad.append("schedulable when it came back up")
        # With exact edges, the watch timeline only adds an uncordon seen in between (its receipt
        # time is never early); without them it is the whole evidence.
        elif not outage.timeline_ok and (not exact or "uncordoned" in outage.timeline_text):
            bad.append(outage.timeline_text)
    return Verdict(not bad, "cordoned for every reboot",
                   f"cordoned for all {len(outages)} reboot(s)" if not bad else "; ".join(bad))


def evicted(pods_at_down: list[tuple[str, ...]], bypassed: list[str]) -> Verdict:
    """No pod a drain must move was bound to the node as it went down for a reboot (lab evidence:
    the API server's state at that instant), and no pod on it was deleted directly while its
    PodDisruptionBudget allowed no disruption (the Eviction API would have refused)."""
    expected = "no pod left on the node when it went down; PodDisruptionBudgets honoured"
    bad = []
    for pods in pods_at_down:
        if pods:
            shown = ", ".join(pods[:3]) + (f" and {len(pods) - 3} more" if len(pods) > 3 else "")
            bad.append(f"went down with {len(pods)} pod(s) still on it: {shown}")
    if bypassed:
        bad.append(f"{len(bypassed)} pod(s) deleted against their PodDisruptionBudget "
                   f"(not evicted): {'; '.join(bypassed[:2])}")
    if bad:
        return Verdict(False, expected, "; ".join(bad))
    return Verdict(True, expected, f"drained before all {len(pods_at_down)} reboot(s)" if pods_at_down
                   else "no reboot")


# --- credentials -----------------------------------------------------------------------------------

_BASE64_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{8,}={0,2}")
MIN_SECRET = 3  # shorter "passwords" would match by chance


def url_secrets(url: str) -> set[str]:
    """The secrets a proxy URL carries: its password and ``user:password``, as written and decoded
    (userinfo ends at the last ``@`` before the host, as Go's ``url.Parse`` reads it)."""
    netloc = urllib.parse.urlsplit(url.strip()).netloc if "://" in url else ""
    userinfo, at, _ = netloc.rpartition("@")
    if not at:
        return set()
    user, colon, password = userinfo.partition(":")
    if not colon or len(password) < MIN_SECRET:
        return set()
    found = set()
    for user_text, password_text in ((user, password),
                                     (urllib.parse.unquote(user), urllib.parse.unquote(password))):
        found |= {password_text, f"{user_text}:{password_text}"}
    return found


def credential_forms(secrets: Iterable[str]) -> set[str]:
    """Every way a secret may be written into text: as is, percent-encoded, and Base64 of its UTF-8
    and UTF-16LE bytes (standard and URL-safe; a ``Basic`` token is Base64 of ``user:password``)."""
    forms: set[str] = set()
    for secret in secrets:
        forms |= {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret, safe=":")}
        for raw in (secret.encode(), secret.encode("utf-16-le")):
            encoded = base64.b64encode(raw).decode()
            forms |= {encoded, encoded.rstrip("="), base64.urlsafe_b64encode(raw).decode().rstrip("=")}
    return {f for f in forms if len(f) >= MIN_SECRET}


def reveals(text: str, secrets: set[str], forms: set[str]) -> bool:
    """Whether ``text`` carries any secret in any form — also inside a Base64 token that encodes a
    longer text (alignment differs there, so tokens are decoded and searched)."""
    if any(form in text for form in forms):
        return True
    for token in _BASE64_TOKEN.findall(text):
        padded = token + "=" * (-len(token) % 4)
        for decode in (base64.b64decode, base64.urlsafe_b64decode):
            try:
                raw = decode(padded)
            except (ValueError, binascii.Error):
                continue
            for encoding in ("utf-8", "utf-16-le"):
                decoded = raw.decode(encoding, errors="ignore")
                if any(secret in decoded for secret in secrets):
                    return True
    return False


def credentials(places: list[str], unlisted: Mapping[str, str] | None = None,
                skipped: Sequence[str] = ()) -> Verdict:
    """No proxy credential, in any encoding, in anything the reconciler can write through the API or
    in its log (``places`` names where one was found — never the credential itself); what the run
    could not read (``unlisted``: resource -> why) and what it left out on purpose (``skipped``: an
    existing cluster's platform copies of the proxy settings) are said, not guessed."""
    observed = "none found" if not places else "found in " + "; ".join(sorted(set(places))[:5]) \
        + (f" and {len(set(places)) - 5} more" if len(set(places)) > 5 else "")
    if unlisted:
        observed += "; not readable by this run: " + ", ".join(
            f"{name} ({why})" for name, why in sorted(unlisted.items()))
    if skipped:
        observed += "; not scanned (the platform's own copies of the proxy settings): " + ", ".join(sorted(skipped))
    return Verdict(not places, "no proxy credential (plain, percent-encoded, Basic, Base64 UTF-8/UTF-16LE) in any "
                               "field of any object the run can list (metadata and status included) or the "
                               "reconciler's log", observed)


def trusted_ca(configmap: Mapping[str, Any] | None, wanted: frozenset[str], where: str) -> Verdict:
    """While a proxy is set, the operator's ``trusted-ca`` ConfigMap exists with the injection
    label and holds the merged bundle (``wanted``: its thumbprints) — restored after anyone
    deletes or unlabels it (DESIGN.md §8; the real operator's e2e checks this too)."""
    expected = f"ConfigMap {where} labelled {INJECT_LABEL}=true holding the {len(wanted)}-certificate merged bundle"
    if configmap is None:
        return Verdict(False, expected, "missing")
    labels = (configmap.get("metadata") or {}).get("labels") or {}
    if labels.get(INJECT_LABEL) != "true":
        return Verdict(False, expected, f"label {INJECT_LABEL} is {labels.get(INJECT_LABEL)!r}")
    pem = str((configmap.get("data") or {}).get(BUNDLE_KEY) or "")
    try:
        held = frozenset(c.thumbprint for c in certificates_in_bundle(pem.encode())) if pem else frozenset()
    except CertificateFormatError as exc:
        return Verdict(False, expected, f"not a PEM bundle: {exc}")
    if held != wanted:
        return Verdict(False, expected,
                       f"holds {len(held)} certificate(s), {len(wanted - held)} of the bundle's missing")
    return Verdict(True, expected, f"labelled, {len(held)} certificates")


def host_key_refused(commands: int, warnings: list[str]) -> Verdict:
    """A node whose SSH host key changed got no command from the reconciler (``commands`` run
    since the change), and a Warning Event about its Node says why."""
    expected = "no command sent after its host key changed; a Warning Event about the Node names the host key"
    named = [w for w in warnings if "host key" in w.lower() or "hostkey" in w.lower()]
    if commands:
        return Verdict(False, expected, f"{commands} command(s) ran on it after its host key changed")
    if not named:
        return Verdict(False, expected, "refused, but no Warning Event about its Node names the host key"
                       + (f" (saw: {'; '.join(warnings)[:200]})" if warnings else ""))
    return Verdict(True, expected, f"refused; {named[0][:160]}")


def stuck_reported(back: bool, warnings: list[str], waited: float | None = None, why: str = "") -> Verdict:
    """A node that never came back from its reboot is reported by a Warning Event about its Node
    (``waited``: how long the step gave the reconciler; ``why``: where that came from)."""
    expected = "a Warning Event about the Node reports that it did not come back" + (
        f" (waited up to {waited:g} s{': ' + why if why else ''})" if waited else "")
    if back:
        return Verdict(False, expected, "the node came back (the scenario expected it to hang)")
    if not warnings:
        return Verdict(False, expected, "no Warning Event about its Node")
    return Verdict(True, expected, warnings[-1][:200])
