"""The bring-your-own-proxy command-line options: every one reaches ``ProxyOptions``, and
``proxyfleet conformance`` refuses bad ones before starting anything."""

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner

from proxyfleet.harness.cli.proxyoptions import proxy_options, proxy_options_from
from proxyfleet.harness.lab.vendoroptions import ProxyOptions
from tests.support import HANG


def test_every_option_reaches_proxy_options(tmp_path: Path) -> None:
    seen: list[ProxyOptions] = []

    @click.command()
    @proxy_options
    def command(**values: Any) -> None:
        seen.append(proxy_options_from(values))
        assert values == {}  # nothing left over for the command itself

    auth = tmp_path / "auth"
    auth.write_text("u:p")
    result = CliRunner().invoke(command, ["--proxy-command", "squid -f {config_dir}/s.conf", "--proxy-listen",
                                          "127.0.0.2:3128", "--proxy-auth-file", str(auth), "--proxy-config",
                                          str(tmp_path), "--proxy-config", str(auth), "--proxy-user", "proxy",
                                          "--proxy-access-log", "{config_dir}/a.log", "--proxy-tls-port", "3129",
                                          "--proxy-tls-ca", str(auth), "--proxy-log-format", "tinyproxy"])
    assert result.exit_code == 0, result.output
    assert seen == [ProxyOptions(command="squid -f {config_dir}/s.conf", listen="127.0.0.2:3128", auth_file=auth,
                                 config=(tmp_path, auth), user="proxy", access_log="{config_dir}/a.log",
                                 log_format="tinyproxy", tls_port=3129, tls_ca_file=auth)]
    assert ProxyOptions.from_json(seen[0].to_json()) == seen[0]


def test_conformance_refuses_bad_proxy_options_before_any_lab_starts(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--proxy-command", "squid",
                             "--proxy-url", "http://127.0.0.1:3128"], capture_output=True, text=True, timeout=HANG,
                            cwd=tmp_path)
    assert result.returncode == 2 and "excludes --proxy-command" in result.stderr
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--proxy-url",
                             "http://vendor:hunter2@127.0.0.1:3128"], capture_output=True, text=True, timeout=HANG,
                            cwd=tmp_path)
    assert result.returncode == 2 and "--proxy-auth-file" in result.stderr
    assert "hunter2" not in result.stderr


def test_the_readme_examples_use_only_real_options() -> None:
    from proxyfleet.harness.cli.conformance import conformance

    text = (Path(__file__).parents[3] / "README.md").read_text()
    section = text.split("## Validating your proxy", 1)[1].split("\n## ", 1)[0]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    used = set(re.findall(r"(--[a-z][a-z-]+)", block))
    known = {name for parameter in conformance.params for name in parameter.opts}
    assert used - {"--write"} <= known, used - known
    assert {"--proxy-command", "--proxy-image", "--proxy-url", "--proxy-ca", "--proxy-auth-file"} <= used
    for name in ("{config_dir}", "{listen_host}", "{listen_port}", "{hosts_file}", "{egress_address}",
                 "{public_ca_file}"):
        assert name in section


def test_a_bad_log_format_is_refused_as_the_command_line_is_read() -> None:
    seen: list[ProxyOptions] = []

    @click.command()
    @proxy_options
    def command(**values: Any) -> None:
        seen.append(proxy_options_from(values))

    assert CliRunner().invoke(command, []).exit_code == 0 and seen[0].log_format == "auto"
    result = CliRunner().invoke(command, ["--proxy-log-format", r"(?P<client>\S+) (?P<user>\S+)"])
    assert result.exit_code == 2 and len(seen) == 1
    assert "Invalid value for '--proxy-log-format': unknown group(s) user" in result.output
