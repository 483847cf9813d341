"""A conformance run as JSON (machines), JUnit XML (CI) and one self-contained HTML page (people).

JSON schema (``--json``)::

    {"summary": {"passed": int, "failed": int, "skipped": int, "inconclusive": int},   # scenarios
     "duration_s": float, "nodes": int, "variant": str,
     "scenarios": [{"name": str, "workflow": str, "status": "passed"|"failed"|"skipped"|"inconclusive",
                    "ending": "passed"|"checks-failed"|"error"|"skipped", "nodes": int,
                    "api_internal_host": str,
                    "duration_s": float, "error": str (only when the scenario broke outside its checks),
                    "checks": [{"check": str, "status": str, "expected": str, "observed": str,
                                "step": str, "nodes": [str]}],   # see "Checks" below
                    "timeline": [{"step": str, "nodes": int, "converged_s": {node: seconds},
                                  "lag_s": {process: {"worst_s": float, "stalled_s": float,
                                                      "gc_s": float, "gc_worst_s": float (the judge's process only)}},
                                  "deadline_s": float, "deadline": str (how it follows from the step),
                                  "deadline_moved_s": float (how far the lab's own stalls had moved the
                                      deadline when the last node converged; absent in older reports),
                                  "note": str (only when the step did more than the ordinary)}],
                    "flows": {"<proxy> <kind> <host> <status>": {"count": int}},
                    "violations": [{"time", "origin", "source", "source_port"}]}]}

Checks: one record per distinct ``(check, status, expected, observed, step)`` with the ``nodes``
it holds for, in the order judged (``results.group_checks``): every node's verdict on every check
is there, written once per outcome rather than once per node. Reports written before the grouping
hold one record per node (``"node": str`` instead of ``"nodes"``); ``results.expand_checks`` (the
one reading of ``checks``, behind ``ConformanceRun.from_json``) reads both. The file puts each
record whose values are plain (a check record, a violation, a step's ``converged_s``) on one line.

HTML: up to ``fleetsummary.LARGE_FLEET`` nodes a scenario is a node x check matrix; past it, counts
per check and step, the results that are not a pass in full (identical ones grouped) and the passes
grouped by identical observation, with a text box that filters the rows (inline script, no
external asset).

Every text is redacted again on the way out: no proxy credentials in any report. Nodes print
what they like, so JUnit and HTML show every character that is not text (controls, NUL,
surrogates, U+FFFE/U+FFFF) as a visible escape (``\x1b``), never raw: XML 1.0 cannot hold
them at all and HTML parsers drop or replace them. (JSON escapes them itself.)
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from proxyfleet.core.noproxy import redact_text
from proxyfleet.harness.conformance.causes import failure_causes
from proxyfleet.harness.conformance.fleetsummary import (
    NAMED_PASSES,
    is_large,
    merged_steps,
    outcomes,
    pass_summaries,
    step_counts,
)
from proxyfleet.harness.conformance.headroom import closest_step
from proxyfleet.harness.conformance.results import (
    CHECK_FAMILIES,
    CheckResult,
    ConformanceRun,
    ScenarioResult,
    verdict_of,
)


def _clean(value: Any) -> Any:
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


# Characters outside XML 1.0's Char production, and the C1 controls and DEL it allows but that
# are no text either: what ``printable`` escapes.
_NOT_TEXT = re.compile(r"[^\t\n\r\x20-\x7e\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def printable(text: str) -> str:
    """``text`` with every character that is not text written as its escape, visibly (ESC as the
    four characters ``\\x1b``, a lone surrogate as ``\\ud800``), so that any XML or HTML parser
    reads what the node printed."""
    return _NOT_TEXT.sub(_escape, text)


def _plain(value: Any) -> bool:
    return not isinstance(value, (dict, list))


def _one_line(value: dict[str, Any] | list[Any]) -> bool:
    """A record of plain values (lists of plain values included): a check record with its nodes,
    a violation, a step's ``converged_s``."""
    items = value.values() if isinstance(value, dict) else value
    return all(_plain(v) or (isinstance(v, list) and all(_plain(x) for x in v)) for v in items)


def dumps(value: Any, depth: int = 0) -> str:
    """``value`` as indented JSON with every record of plain values on one line: a thousand node
    names of one check record take one line, not a thousand."""
    if _plain(value) or not value or _one_line(value):
        return json.dumps(value)
    pad, inner = "  " * depth, "  " * (depth + 1)
    if isinstance(value, dict):
        # a key that is not text is written as JSON writes it ("true", "1.5")
        items = [f"{inner}{json.dumps(k if isinstance(k, str) else json.dumps(k))}: {dumps(v, depth + 1)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{pad}}}"
    return "[\n" + ",\n".join(f"{inner}{dumps(v, depth + 1)}" for v in value) + f"\n{pad}]"


def write_json(run: ConformanceRun, path: Path) -> None:
    path.write_text(dumps(_clean(run.to_json())) + "\n")


def _families(scenario: ScenarioResult) -> list[str]:
    present = {c.check for c in scenario.checks}
    return [f for f in CHECK_FAMILIES if f in present] + sorted(present - set(CHECK_FAMILIES))


def skip_reasons(checks: list[CheckResult]) -> list[str]:
    """The distinct reasons of the skipped ones among ``checks``, in order."""
    return list(dict.fromkeys(c.observed for c in checks if c.status == "skipped"))


def write_junit(run: ConformanceRun, path: Path) -> None:
    """One testcase per scenario x check family (plus one for a scenario that broke outside its checks).
    A family none of whose checks could be judged (``skipped``: the evidence it needs is not there)
    is a skipped testcase whose message is the reason."""
    cases: list[ET.Element] = []
    failures = skipped = errors = 0
    for scenario in run.scenarios:
        classname = f"proxyfleet.{scenario.workflow}"
        if scenario.error or scenario.status == "skipped" or not scenario.checks:
            case = ET.Element("testcase", classname=classname, name=f"{scenario.name} [scenario]",
                              time=f"{scenario.duration_s:.3f}")
            if scenario.status == "skipped":
                ET.SubElement(case, "skipped", message=scenario.error or "skipped")
                skipped += 1
            elif scenario.status == "failed":
                ET.SubElement(case, "failure", message="the scenario failed outside its checks").text = \
                    scenario.error or "no checks were recorded"
                failures += 1
            cases.append(case)
        for family in _families(scenario):
            checks = [c for c in scenario.checks if c.check == family]
            bad = [c for c in checks if c.status == "failed"]
            unjudged = [c for c in checks if c.status == "inconclusive"]
            case = ET.Element("testcase", classname=classname, name=f"{scenario.name} [{family}]", time="0")
            if bad:
                failures += 1
                failure = ET.SubElement(case, "failure",
                                        message=f"{len(bad)} of {len(checks)} {family} check(s) failed")
                failure.text = "\n".join(c.describe() for c in bad)
            elif unjudged:  # the lab's own starvation: neither a pass nor a failure of the reconciler
                errors += 1
                error = ET.SubElement(case, "error", message=f"{len(unjudged)} of {len(checks)} {family} "
                                                             "check(s) inconclusive: the lab was starved")
                error.text = "\n".join(c.describe() for c in unjudged)
            elif checks and all(c.status == "skipped" for c in checks):
                skipped += 1
                ET.SubElement(case, "skipped", message="; ".join(skip_reasons(checks)))
            cases.append(case)
    well, put_back = run.put_back_lines()
    if put_back:  # a cluster run: its put-back is part of the job's verdict (exit code 3)
        case = ET.Element("testcase", classname="proxyfleet.cluster", name="put back", time="0")
        if not well:
            failures += 1
            ET.SubElement(case, "failure", message=put_back[0]).text = "\n".join(put_back)
        cases.append(case)
    suite = ET.Element("testsuite", name="proxyfleet conformance", tests=str(len(cases)), failures=str(failures),
                       errors=str(errors), skipped=str(skipped), time=f"{run.duration_s:.3f}")
    properties = ET.SubElement(suite, "properties")
    ET.SubElement(properties, "property", name="nodes", value=str(run.nodes))
    if run.linux_nodes:
        ET.SubElement(properties, "property", name="linux_nodes", value=str(run.linux_nodes))
        ET.SubElement(properties, "property", name="linux_flavour", value=run.linux_flavour)
    ET.SubElement(properties, "property", name="variant", value=run.variant)
    suite.extend(cases)
    root = ET.Element("testsuites", name="proxyfleet")
    root.append(suite)
    for element in root.iter():  # the one place values go in: redacted, then made printable
        element.attrib = {name: printable(redact_text(value)) for name, value in element.attrib.items()}
        if element.text:
            element.text = printable(redact_text(element.text))
    ET.indent(root)
    path.write_bytes(ET.tostring(root, encoding="utf-8", xml_declaration=True))


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:2em}h3{font-size:1em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left}
th{background:#f3f3f3}.pass{background:#e5f5e5}.fail{background:#fbe1e1}.skip{background:#eee}
td.cell{text-align:center;font-weight:bold}.small{font-size:.85em;color:#555}
.badge{padding:.1em .5em;border-radius:.3em;color:#fff}.badge.pass{background:#2a7d2a}.badge.fail{background:#b22}
.badge.skip{background:#888}
"""


def _e(value: object) -> str:
    """The one way a value goes into the page: redacted, printable, escaped."""
    return html.escape(printable(redact_text(str(value))))


def _matrix(scenario: ScenarioResult) -> str:
    families = _families(scenario)
    nodes = sorted({c.node for c in scenario.checks})
    by_key: dict[tuple[str, str], list[CheckResult]] = {}
    for check in scenario.checks:
        by_key.setdefault((check.node, check.check), []).append(check)
    rows = ["<tr><th>node</th>" + "".join(f'<th title="{_e(CHECK_FAMILIES.get(f, f))}">{_e(f)}</th>'
                                         for f in families) + "</tr>"]
    for node in nodes:
        cells = []
        for family in families:
            checks = by_key.get((node, family), [])
            if not checks:
                cells.append('<td class="cell skip">&ndash;</td>')
                continue
            bad = [c for c in checks if c.status == "failed"]
            unjudged = [c for c in checks if c.status == "inconclusive"]
            tip = "\n".join(f"{c.step}: {c.status}: expected {c.expected}; observed {c.observed}" for c in checks)
            if not bad and all(c.status == "skipped" for c in checks):
                cells.append(f'<td class="cell skip" title="{_e(tip)}">skipped</td>')
                continue
            if not bad and unjudged:
                cells.append(f'<td class="cell skip" title="{_e(tip)}">?</td>')
                continue
            mark = "✗" if bad else "✓"
            cells.append(f'<td class="cell {"fail" if bad else "pass"}" title="{_e(tip)}">{mark}'
                         f'{f" {len(bad)}" if bad else ""}</td>')
        rows.append(f"<tr><td>{_e(node)}</td>{''.join(cells)}</tr>")
    return "<table>" + "".join(rows) + "</table>"


def _failures(scenario: ScenarioResult) -> str:
    bad = scenario.failures()
    if not bad:
        return ""
    rows = "".join(f"<tr><td>{_e(c.node)}</td><td>{_e(c.step)}</td><td>{_e(c.check)}</td>"
                   f"<td>{_e(c.expected)}</td><td>{_e(c.observed)}</td></tr>" for c in bad[:200])
    return ("<h3>Failed checks</h3><table><tr><th>node</th><th>step</th><th>check</th><th>expected</th>"
            f"<th>observed</th></tr>{rows}</table>")


def _skipped(scenario: ScenarioResult) -> str:
    """Each check family with skipped results, and why (what evidence it needed)."""
    rows = []
    for family in _families(scenario):
        checks = [c for c in scenario.checks if c.check == family]
        reasons = skip_reasons(checks)
        if reasons:
            count = sum(1 for c in checks if c.status == "skipped")
            rows.append(f"<tr><td>{_e(family)}</td><td>{count} of {len(checks)}</td>"
                        f"<td>{'<br>'.join(_e(r) for r in reasons[:5])}</td></tr>")
    if not rows:
        return ""
    return ("<h3>Skipped checks (not judged: the evidence they need is not there)</h3><table><tr><th>check</th>"
            f"<th>skipped</th><th>why</th></tr>{''.join(rows)}</table>")


def _timeline_svg(scenario: ScenarioResult, large: bool = False) -> str:
    """Nodes converged over time, one line per step (``large``: one corner per pixel column)."""
    steps = [s for s in scenario.timeline if s.get("converged_s")]
    if not steps:
        return ""
    longest = max(max(s["converged_s"].values()) for s in steps) or 1.0
    most = max(s["nodes"] for s in steps) or 1
    width, height, pad = 640, 220, 40
    colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"]
    lines, legend = [], []
    for index, step in enumerate(steps):
        times = sorted(step["converged_s"].values())
        points: list[tuple[float, float]] = [(pad, height - pad)]
        corners = (merged_steps(times, longest, width - 2 * pad) if large
                   else [(seconds, count) for count, seconds in enumerate(times, start=1)])
        for seconds, count in corners:
            x = pad + (width - 2 * pad) * seconds / longest
            points.append((x, points[-1][1]))
            points.append((x, height - pad - (height - 2 * pad) * count / most))
        colour = colours[index % len(colours)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        lines.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        legend.append(f'<span style="color:{colour}">■</span> {_e(step["step"])} '
                      f'({len(times)}/{step["nodes"]} in {times[-1]:.2f}s)')
    axes = (f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#444"/>'
            f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#444"/>'
            f'<text x="{width - pad}" y="{height - pad + 16}" text-anchor="end" font-size="11">{longest:.1f}s</text>'
            f'<text x="{pad - 4}" y="{pad + 4}" text-anchor="end" font-size="11">{most}</text>'
            f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="11">'
            "seconds after the change</text>")
    return (f'<h3>Rollout timeline (nodes converged)</h3><svg width="{width}" height="{height}" '
            f'role="img" aria-label="nodes converged over time">{axes}{"".join(lines)}</svg>'
            f'<div class="small">{"<br>".join(legend)}</div>')


def _flows(scenario: ScenarioResult) -> str:
    if not scenario.flows:
        return "<h3>Proxy flows</h3><p class=small>none</p>"
    rows = "".join(f"<tr><td>{_e(key)}</td><td>{value['count']}</td></tr>"
                   for key, value in sorted(scenario.flows.items()))
    return f"<h3>Proxy flows</h3><table><tr><th>proxy kind host status</th><th>count</th></tr>{rows}</table>"


def _violations(scenario: ScenarioResult) -> str:
    if not scenario.violations:
        return "<h3>Firewall violations</h3><p class=small>none</p>"
    rows = "".join(f"<tr><td>{_e(v.get('time'))}</td><td>{_e(v.get('source'))}</td><td>{_e(v.get('origin'))}</td></tr>"
                   for v in scenario.violations[:200])
    return f"<h3>Firewall violations</h3><table><tr><th>time</th><th>node</th><th>origin</th></tr>{rows}</table>"


def _lags(scenario: ScenarioResult) -> str:
    """Per step, how late each process's event loop was: the lab's own starvation, beside the
    verdicts it must not have decided."""
    steps = [s for s in scenario.timeline if s.get("lag_s")]
    if not steps:
        return ""
    def collector(lag: dict[str, float]) -> str:  # measured in the judge's process only
        return f"{lag['gc_s']:.2f} (longest {lag.get('gc_worst_s', 0):.2f})" if "gc_s" in lag else ""

    rows = "".join(f"<tr><td>{_e(s['step'])}</td><td>{_e(process)}</td><td>{lag.get('worst_s', 0):.2f}</td>"
                   f"<td>{lag.get('stalled_s', 0):.2f}</td><td>{collector(lag)}</td></tr>"
                   for s in steps for process, lag in s["lag_s"].items())
    return ("<h3>Event-loop lag (the lab's own starvation)</h3><table><tr><th>step</th><th>process</th>"
            f"<th>worst stall (s)</th><th>stalled in all (s)</th><th>garbage collection (s)</th></tr>{rows}</table>")


def _causes(run: ConformanceRun, filterable: bool = False) -> str:
    """The failures grouped by cause, as ``proxyfleet report show`` prints them: what to read first
    (``filterable``: rows the page's filter acts on)."""
    causes = failure_causes(run)
    if not causes:
        return ""
    row = '<tr class="f">' if filterable else "<tr>"
    rows = "".join(f'{row}<td><a href="#{_e(c.scenario)}">{_e(c.workflow)}</a></td><td>{_e(c.check)}'
                   f'{"" if c.status == "failed" else f" ({_e(c.status)})"}</td><td>{len(c.nodes)}</td>'
                   f"<td>{_e(c.step)}</td><td>{_e(c.observed)}</td><td>{_e(c.node_list())}</td></tr>"
                   for c in causes[:200])
    return ("<h2>Failures by cause</h2><table><tr><th>workflow</th><th>check</th><th>nodes</th><th>after step</th>"
            f"<th>observed (first node)</th><th>on</th></tr>{rows}</table>")


# Characters of not-passed rows one summarised scenario shows: all of them in any run that is
# not broken everywhere; a reconciler that fails every node differently would otherwise write a
# page no browser opens (12 scenarios x 250 KB stay under 5 MB with the rest of the page).
NOT_PASSED_SHOWN = 250_000

_FILTER = ('<p style="position:sticky;top:0;background:#fff;padding:.4em 0"><label>Filter rows '
           '<input id="filter" type="search" size="40" autocomplete="off" '
           'placeholder="node, check or any text"></label> <span id="shown" class="small"></span></p>')
# Hides the rows (class f) whose text does not contain what was typed; no external asset.
_FILTER_SCRIPT = """<script>
(function(){var box=document.getElementById("filter"),shown=document.getElementById("shown"),
rows=document.querySelectorAll("tr.f");
function apply(){var q=box.value.trim().toLowerCase(),n=0;
for(var i=0;i<rows.length;i++){var hide=q!==""&&rows[i].textContent.toLowerCase().indexOf(q)<0;
rows[i].hidden=hide;if(!hide){n++;}}
shown.textContent=q?n+" of "+rows.length+" rows":"";}
box.addEventListener("input",apply);apply();})();
</script>"""


def _counts(scenario: ScenarioResult) -> str:
    """Per check and step, how many nodes' results passed, failed, stayed inconclusive, were skipped."""
    rows = []
    for counted in step_counts(scenario.checks):
        n = counted.counts
        mood = "fail" if n["failed"] else "skip" if n["inconclusive"] or not n["passed"] else "pass"
        rows.append(f'<tr class="f {mood}"><td>{_e(counted.check)}</td><td>{_e(counted.step)}</td>'
                    f'<td>{n["passed"]}</td><td>{n["failed"]}</td><td>{n["inconclusive"]}</td>'
                    f'<td>{n["skipped"]}</td><td>{len(counted.nodes)}</td></tr>')
    return ("<h3>Checks by step</h3><table><tr><th>check</th><th>after step</th><th>passed</th><th>failed</th>"
            f"<th>inconclusive</th><th>skipped</th><th>nodes</th></tr>{''.join(rows)}</table>")


def _not_passed(scenario: ScenarioResult) -> str:
    """The failed and inconclusive results in full, identical ones (but for the node) as one row."""
    found = outcomes(scenario.checks, ["failed", "inconclusive"])
    if not found:
        return "<h3>Failed and inconclusive results</h3><p class=small>none: every node passed every check judged</p>"
    rows: list[str] = []
    size = 0
    for outcome in found:
        row = (f'<tr class="f {"fail" if outcome.status == "failed" else "skip"}">'
               f'<td>{", ".join(_e(n) for n in outcome.nodes)}</td><td>{len(outcome.nodes)}</td>'
               f"<td>{_e(outcome.step)}</td><td>{_e(outcome.check)}</td><td>{_e(outcome.status)}</td>"
               f"<td>{_e(outcome.expected)}</td><td>{_e(outcome.observed)}</td></tr>")
        if rows and size + len(row) > NOT_PASSED_SHOWN:
            break
        rows.append(row)
        size += len(row)
    left = found[len(rows):]
    more = (f"<p class=small>{len(left)} more row(s), on {len({n for o in left for n in o.nodes})} node(s), not "
            "shown: the JSON report holds them all (proxyfleet report show r.json --node ADDRESS)</p>"
            if left else "")
    nodes = len({n for o in found for n in o.nodes})
    return (f"<h3>Failed and inconclusive results ({nodes} node(s); identical results grouped)</h3>"
            "<table><tr><th>nodes</th><th>count</th><th>after step</th><th>check</th><th>status</th>"
            f"<th>expected</th><th>observed</th></tr>{''.join(rows)}</table>{more}")


def _passes(scenario: ScenarioResult) -> str:
    """The passes grouped by identical observation, the largest groups of each check and step."""
    rows = []
    for summary in pass_summaries(scenario.checks):
        for outcome in summary.shown:
            who = (", ".join(_e(n) for n in outcome.nodes) if len(outcome.nodes) <= NAMED_PASSES
                   else f"{len(outcome.nodes)} nodes")
            rows.append(f'<tr class="f"><td>{_e(summary.check)}</td><td>{_e(summary.step)}</td><td>{who}</td>'
                        f"<td>{_e(outcome.expected)}</td><td>{_e(outcome.observed)}</td></tr>")
        if summary.other_observations:
            rows.append(f'<tr class="f"><td>{_e(summary.check)}</td><td>{_e(summary.step)}</td>'
                        f"<td>{summary.other_nodes} nodes</td><td></td><td class=small>"
                        f"{summary.other_observations} other observation(s), each passed</td></tr>")
    if not rows:
        return ""
    return ("<h3>Passed (identical observations grouped)</h3><table><tr><th>check</th><th>after step</th>"
            f"<th>nodes</th><th>expected</th><th>observed</th></tr>{''.join(rows)}</table>")


def _summarised(scenario: ScenarioResult) -> str:
    """A scenario on more than ``LARGE_FLEET`` nodes: counts, what did not pass in full, passes grouped."""
    nodes = len({c.node for c in scenario.checks})
    return (f"<p class=small>{nodes} nodes: summarised (a node not named under \u201cFailed and inconclusive "
            "results\u201d passed every check it was judged on, or was skipped as counted)</p>"
            f"{_counts(scenario)}{_not_passed(scenario)}{_passes(scenario)}")


def _headroom(run: ConformanceRun) -> str:
    """The step that came closest to its deadline (highlighted from half of it on)."""
    closest = closest_step(run.scenarios)
    if closest is None:
        return ""
    return f'<p class="{"skip" if closest.close else "small"}">{_e(closest.describe())}</p>'


def render_html(run: ConformanceRun) -> str:
    summary = run.summary()
    said = verdict_of(run.reported_exit)
    verdict = {"PASSED": "pass", "FAILED": "fail"}.get(said, "skip")
    well, put_back = run.put_back_lines()
    put_back_html = (f'<p class="{"" if well else "fail"}">' + "<br>".join(_e(line) for line in put_back) + "</p>"
                     if put_back else "")
    overview = "".join(
        f'<tr><td><a href="#{_e(s.name)}">{_e(s.name)}</a></td><td>{_e(s.workflow)}</td>'
        f'<td><span class="badge {"pass" if s.status == "passed" else "fail" if s.status == "failed" else "skip"}">'
        f"{_e(s.status)}</span></td><td>{len(s.failures())}/{len(s.checks)}</td><td>{s.duration_s:.1f}s</td></tr>"
        for s in run.scenarios)
    sections = []
    large = [is_large(s) for s in run.scenarios]
    for s, summarised in zip(run.scenarios, large, strict=True):
        error = f"<pre>{_e(s.error)}</pre>" if s.error else ""
        body = _summarised(s) if summarised else f"<h3>Node &times; check</h3>{_matrix(s)}{_failures(s)}"
        sections.append(f'<h2 id="{_e(s.name)}">{_e(s.workflow)}: {_e(s.name)}</h2>{error}'
                        f"{body}{_skipped(s)}{_timeline_svg(s, summarised)}"
                        f"{_lags(s)}{_flows(s)}{_violations(s)}")
    # the filter only where some scenario is summarised: a small run's page is as it always was
    filter_box, script = (_FILTER, _FILTER_SCRIPT) if any(large) else ("", "")
    return ("<!doctype html><html><head><meta charset=utf-8><title>proxyfleet conformance</title>"
            f"<style>{_STYLE}</style></head><body><h1>proxyfleet conformance "
            f'<span class="badge {verdict}">{said}</span></h1>'
            f"<p>{_e(run.fleet)} per lab, reconciler {_e(run.variant)}, {run.duration_s:.1f}s; scenarios: "
            f"{summary['passed']} passed, {summary['failed']} failed, {summary['skipped']} skipped, "
            f"{summary['inconclusive']} inconclusive.</p>"
            f"{put_back_html}{_headroom(run)}"
            "<table><tr><th>scenario</th><th>workflow</th><th>status</th><th>failed checks</th>"
            f"<th>duration</th></tr>{overview}</table>{filter_box}{_causes(run, any(large))}{''.join(sections)}"
            f"{script}</body></html>\n")


def write_html(run: ConformanceRun, path: Path) -> None:
    path.write_text(render_html(run))
