"""``proxyfleet report show r.json``: a conformance run's JSON report read in a terminal — the
summary, then the failures grouped by cause (one line per check by observed pattern, with the
nodes it hit), optionally for some nodes or checks only. ``proxyfleet report merge``: the reports
of a sharded run's parts joined into one run's reports."""

from __future__ import annotations

import json
from pathlib import Path

import click
from rich.console import Console
from rich.text import Text

from proxyfleet.harness.conformance.causes import failure_causes
from proxyfleet.harness.conformance.headroom import closest_step
from proxyfleet.harness.conformance.merge import MergeError
from proxyfleet.harness.conformance.merge import merge as merge_runs
from proxyfleet.harness.conformance.report import write_html, write_json, write_junit
from proxyfleet.harness.conformance.results import CHECK_FAMILIES, ConformanceRun, verdict_of

EXPECTED_SHOWN = 120  # characters of a cause's expected value on its line (the JSON report has it whole)


@click.group()
def report() -> None:
    """Read a conformance run's JSON report: the summary and the failures grouped by cause."""


def read_report(path: Path) -> ConformanceRun:
    """The run a ``--json`` report holds, or one ``Error:`` line saying why it is not one. Its checks
    may be grouped (one record per outcome with its nodes) or, as older reports hold them, one
    record per node: ``ConformanceRun.from_json`` reads both."""
    try:
        data = json.loads(path.read_text())
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return ConformanceRun.from_json(data)
    except OSError as exc:
        raise click.ClickException(f"cannot read {path}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        # the file may be anything: name what is wrong, never echo it
        what = f"missing field {exc}" if isinstance(exc, KeyError) else type(exc).__name__
        raise click.ClickException(f"{path} is not a proxyfleet conformance --json report ({what})") from None


def print_headroom(console: Console, run: ConformanceRun) -> None:
    """The step that came closest to its deadline (yellow from half of it on), if any had nodes."""
    closest = closest_step(run.scenarios)
    if closest is not None:
        console.print(Text(closest.describe(), style=closest.style))


@report.command()
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--node", "nodes", multiple=True, metavar="ADDRESS", help="Only failures on this node (repeatable).")
@click.option("--check", "checks", multiple=True, metavar="NAME",
              help="Only failures of this check (repeatable), e.g. registry-env.")
def show(path: Path, nodes: tuple[str, ...], checks: tuple[str, ...]) -> None:
    """Print the run's summary and its failures grouped by cause; exit with the run's own code."""
    unknown = [c for c in checks if c not in CHECK_FAMILIES]
    if unknown:
        raise click.UsageError(f"--check {', '.join(unknown)}: no such check; one of {', '.join(CHECK_FAMILIES)}")
    run = read_report(path)
    console = Console(highlight=False)
    summary = run.summary()
    code = run.reported_exit
    word = verdict_of(code)
    line = Text(word, style=f"bold {'green' if word == 'PASSED' else 'red' if word == 'FAILED' else 'yellow'}")
    line.append(f"  {len(run.scenarios)} scenario(s), {run.fleet} per lab, reconciler {run.variant}, "
                f"{run.duration_s:.0f} s: {summary['passed']} passed, {summary['failed']} failed, "
                f"{summary['skipped']} skipped, {summary['inconclusive']} inconclusive", style="default")
    console.print(line)
    print_headroom(console, run)
    well, lines = run.put_back_lines()
    for entry in lines:
        console.print(Text(entry, style="default" if well else "red"))
    for scenario in run.scenarios:
        if scenario.error:
            first = scenario.error.strip().splitlines()[-1] if scenario.error.strip() else ""
            console.print(Text(f"{scenario.workflow}: {scenario.name} broke: {first}", style="red"))
    causes = failure_causes(run, nodes, checks)
    filtered = " (filtered: " + ", ".join([*nodes, *checks]) + ")" if nodes or checks else ""
    if not causes:
        console.print(f"no failed or inconclusive check{filtered}")
    else:
        console.print(f"\n{len(causes)} cause(s){filtered}, the most widespread first:")
        for cause in causes:
            console.print(Text(cause.describe(), style="red" if cause.status == "failed" else "yellow"))
            expected = cause.expected[:EXPECTED_SHOWN] + ("…" if len(cause.expected) > EXPECTED_SHOWN else "")
            console.print(Text(f"    nodes: {cause.node_list()}; expected {expected}", style="dim"))
    raise SystemExit(code)


@report.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path), help="Write the JSON here.")
@click.option("--junit", type=click.Path(dir_okay=False, path_type=Path), help="Write JUnit XML here.")
@click.option("--html", type=click.Path(dir_okay=False, path_type=Path), help="Write the HTML report here.")
def merge(paths: tuple[Path, ...], json_path: Path | None, junit: Path | None, html: Path | None) -> None:
    """Join the --json reports of a sharded run's parts (--shard K/N) into one run; exit with its code."""
    try:
        run = merge_runs([(str(path), read_report(path)) for path in paths])
    except MergeError as exc:
        raise click.ClickException(str(exc)) from None
    for path, writer in ((json_path, write_json), (junit, write_junit), (html, write_html)):
        if path is not None:
            writer(run, path)
            click.echo(f"wrote {path}")
    summary = run.summary()
    click.echo(f"{len(run.shards)} part(s), {len(run.scenarios)} scenario(s), longest part "
               f"{run.duration_s:.0f} s: {summary['passed']} passed, {summary['failed']} failed, "
               f"{summary['skipped']} skipped, {summary['inconclusive']} inconclusive")
    closest = closest_step(run.scenarios)  # of every part's machine
    if closest is not None:
        click.echo(closest.describe())
    raise SystemExit(run.reported_exit)
