"""A run kept in a file: ``proxyfleet conformance --config run.yaml``, the way pytest keeps its
ini and kubectl its kubeconfig. The keys are the command's options, grouped under the headings
``--help`` shows (``lab``, ``reconciler``, ``proxy``, ``cluster``, ``reports``); a key is the
option's name without its dashes and without the group's own prefix (``proxy: {command: …}`` is
``--proxy-command``). Options on the command line override the file.

A bad file is one ``Error:`` line naming the file, the key and what is allowed, and never echoes
its contents: it may name files that hold secrets (secrets themselves stay in those files; no
option takes one). Relative paths are relative to the file, so a checked-in run works from any
directory.

The JSON report keeps the run's effective options in the same shape (``config``), credentials
in them redacted, and ``--config-from r.json`` runs it again.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import click
import yaml

from proxyfleet.core.noproxy import redact_text
from proxyfleet.harness.cli.helpsections import SectionedCommand

# run-file group -> the --help heading whose options it holds
GROUPS = {"lab": "Lab", "reconciler": "Reconciler under test", "proxy": "Your proxy", "cluster": "Existing cluster",
          "reports": "Reports and output"}
_PREFIXES = {"reconciler": "reconciler-", "proxy": "proxy-"}
_NOT_IN_FILES = {"help", "config", "config_from"}
# not recorded in a report: a command line may hold a token no pattern can tell (give it again with
# --config-from); the reports' paths (a re-run would write over the report it repeats)
NOT_RECORDED = {"reconciler_command", "proxy_command", "json_path", "junit", "html", "flows", "keep"}
REDACTED = "***"
SOURCE = "proxyfleet.run_file"  # ctx.meta: what the command's file-given defaults came from, for errors


class RunFileError(click.ClickException):
    """A run file (or a report's configuration) that cannot be used, said in one line."""


def _option_name(param: click.Option) -> str:
    long = max(param.opts, key=len)
    return long.lstrip("-")


def file_keys(command: click.Command, sections: Sequence[tuple[str, Sequence[str]]]) -> dict[tuple[str, str], str]:
    """(group, key) -> parameter name, for every option a run file may set."""
    params = {p.name: p for p in command.params if isinstance(p, click.Option) and p.name}
    keys: dict[tuple[str, str], str] = {}
    by_heading = {heading: names for heading, names in sections}
    for group, heading in GROUPS.items():
        for name in by_heading.get(heading, ()):
            if name in _NOT_IN_FILES or name not in params:
                continue
            key = _option_name(params[name])
            prefix = _PREFIXES.get(group, "")
            keys[(group, key.removeprefix(prefix) if key.startswith(prefix) else key)] = name
    return keys


def _relative_to(value: Any, base: Path) -> Any:
    if isinstance(value, str) and value:
        value = os.path.expanduser(value)
        if not Path(value).is_absolute():
            return str(base / value)
    return value


def _convert(ctx: click.Context, param: click.Option, value: Any, where: str, base: Path | None) -> Any:
    """The value as the option would take it from the command line, or one error line."""
    if param.is_flag:
        if not isinstance(value, bool):
            raise RunFileError(f"{where}: expected true or false")
        return value
    if param.multiple:
        values = value if isinstance(value, list) else [value]
    else:
        if isinstance(value, (list, dict)):
            raise RunFileError(f"{where}: expected one value, not a {type(value).__name__}")
        values = [value]
    if any(isinstance(v, (list, dict)) or v is None for v in values):
        raise RunFileError(f"{where}: expected {'a list of values' if param.multiple else 'a value'}")
    if any(REDACTED in str(v) for v in values):
        raise RunFileError(f"{where}: a redacted value (***) cannot be used; give the option again")
    if base is not None and isinstance(param.type, click.Path):
        values = [_relative_to(str(v), base) for v in values]
    converted = []
    for item in values:
        try:
            converted.append(param.type.convert(item, param, ctx))
        except click.BadParameter as exc:
            raise RunFileError(f"{where}: {exc.message}") from None
    return tuple(converted) if param.multiple else converted[0]


def read_options(data: Any, source: str, ctx: click.Context, sections: Sequence[tuple[str, Sequence[str]]],
                 base: Path | None) -> dict[str, Any]:
    """Parameter name -> value from a run file's parsed contents (``source`` names it in errors)."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise RunFileError(f"{source}: expected a mapping of groups ({', '.join(GROUPS)})")
    keys = file_keys(ctx.command, sections)
    params = {p.name: p for p in ctx.command.params if isinstance(p, click.Option)}
    found: dict[str, Any] = {}
    for group, entries in data.items():
        if group not in GROUPS:
            raise RunFileError(f"{source}: unknown group {str(group)[:40]!r}; allowed: {', '.join(GROUPS)}")
        if entries is None:
            continue
        if not isinstance(entries, dict):
            raise RunFileError(f"{source}: {group}: expected a mapping of options")
        allowed = [key for g, key in keys if g == group]
        for key, value in entries.items():
            name = keys.get((group, str(key)))
            if name is None:
                raise RunFileError(f"{source}: unknown key {group}.{str(key)[:40]}; allowed in {group}: "
                                   f"{', '.join(allowed)}")
            param = params[name]
            assert isinstance(param, click.Option)
            found[name] = _convert(ctx, param, value, f"{source}: {group}.{key}", base)
    return found


def load_run_file(path: Path, ctx: click.Context, sections: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
    """A YAML run file's options (see the module's docstring)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise RunFileError(f"cannot read the run file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise RunFileError(f"{path}: not a text file (a run file is YAML)") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise RunFileError(f"{path}: not YAML{at}") from None
    return read_options(data, str(path), ctx, sections, path.resolve().parent)


def load_report_config(path: Path, ctx: click.Context, sections: Sequence[tuple[str, Sequence[str]]]) -> dict[str, Any]:
    """The options a JSON report recorded (``config``), to run it again."""
    try:
        report = json.loads(path.read_bytes())
    except OSError as exc:
        raise RunFileError(f"cannot read the report {path}: {exc.strerror or exc}") from None
    except ValueError:
        raise RunFileError(f"{path}: not a JSON report") from None
    if not isinstance(report, dict) or not isinstance(report.get("config"), dict):
        raise RunFileError(f"{path}: no recorded configuration (a report of proxyfleet conformance with --json)")
    return read_options(report["config"], f"{path} (config)", ctx, sections, None)


def _plain(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value.resolve())
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)  # a command line may carry a URL with credentials
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return str(value)  # an option's own type (a shard: "1/4"), as the command line gives it


def effective_config(ctx: click.Context, sections: Sequence[tuple[str, Sequence[str]]]) -> dict[str, dict[str, Any]]:
    """The run's options that differ from their defaults, in run-file shape (group -> key -> value),
    paths absolute and credentials redacted: what ``--config-from`` reads back."""
    names = {name: key for key, name in file_keys(ctx.command, sections).items()}
    config: dict[str, dict[str, Any]] = {}
    for param in ctx.command.params:
        if not isinstance(param, click.Option) or param.name not in names or param.name in NOT_RECORDED:
            continue
        source = ctx.get_parameter_source(param.name)
        value = ctx.params.get(param.name)
        if source in (click.core.ParameterSource.DEFAULT, None) or value in (None, (), False):
            continue
        group, key = names[param.name]
        config.setdefault(group, {})[key] = _plain(value)
    return config


Sections = Sequence[tuple[str, Sequence[str]]]
Loader = Callable[[Path, click.Context, Sections], dict[str, Any]]


def _defaults_option(name: str, loader: Loader, sections: Sections, expose: bool, help_text: str) -> Any:
    """An eager option naming a file whose options ``loader`` reads and makes the command's defaults."""
    def read(ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
        if value is not None:
            apply(ctx, loader(value, ctx, sections))
            ctx.meta[SOURCE] = (str(value), loader is load_report_config)
        return value

    return click.option(name, type=click.Path(dir_okay=False, path_type=Path), is_eager=True, callback=read,
                        expose_value=expose, help=help_text)


def config_option(sections: Sections, expose: bool = False) -> Callable[[Any], Any]:
    """``--config FILE`` for a command whose options ``sections`` groups: the file's options become
    the command's defaults (the command line still wins)."""
    return _defaults_option("--config", load_run_file, sections, expose,  # type: ignore[no-any-return]
                            "Read the options from this run file (YAML; the command line overrides it).")


def config_from_option(sections: Sections) -> Callable[[Any], Any]:
    """``--config-from r.json``: the options a report recorded, as defaults."""
    return _defaults_option("--config-from", load_report_config, sections, True,  # type: ignore[no-any-return]
                            "Run again with the options a --json report recorded.")


def apply(ctx: click.Context, options: Mapping[str, Any]) -> None:
    """Make ``options`` the command's defaults: what the command line gives still wins."""
    ctx.default_map = {**(ctx.default_map or {}), **options}


class RunFileCommand(SectionedCommand):
    """A command with grouped help whose options may come from a run file (``--config``) or a
    report (``--config-from``): an error about an option the file set names the file's key too,
    since that is where the user has to look (``--proxy-url and --proxy-command …`` from
    ``proxy: {url: …}`` and ``proxy: {command: …}``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            raise _naming_file_keys(ctx, exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:
            raise _naming_file_keys(ctx, exc) from None


def _naming_file_keys(ctx: click.Context, error: click.UsageError) -> click.UsageError:
    """``error`` with the run-file keys of the options it names that the file set, if any."""
    source = ctx.meta.get(SOURCE)
    if source is None or not isinstance(ctx.command, SectionedCommand):
        return error
    path, is_report = source
    keys = {name: key for key, name in file_keys(ctx.command, ctx.command.sections).items()}
    by_flag = {opt: p.name for p in ctx.command.params if isinstance(p, click.Option) and p.name for opt in p.opts}
    # the options at fault lead the message ("--a, --b: only with --c"); those after its first ": "
    # are the advice, not what the file set wrongly
    subject = error.message.split(": ", 1)[0]
    named = [by_flag[flag] for flag in re.findall(r"--[a-z][a-z0-9-]*", subject) if flag in by_flag]
    if isinstance(error, click.BadParameter) and error.param is not None and error.param.name:
        named.insert(0, error.param.name)
    from_file = [f"{keys[name][0]}.{keys[name][1]}" for name in dict.fromkeys(named)
                 if name in keys and ctx.get_parameter_source(name) == click.core.ParameterSource.DEFAULT_MAP]
    if not from_file:
        return error
    said = f"{error.format_message()} (set in {path}{' (config)' if is_report else ''}: {', '.join(from_file)})"
    return click.UsageError(said, error.ctx)
