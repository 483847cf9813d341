"""The bring-your-own-proxy command-line options: every one reaches ``ProxyOptions``, and
``proxyfleet conformance`` refuses bad ones before starting anything."""

import subprocess
import sys
from pathlib import Path
from typing import Any

import click
from click.testing import CliRunner

from proxyfleet.harness.cli.proxyoptions import proxy_options, proxy_options_from
from proxyfleet.harness.lab.vendoroptions import ProxyOptions


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
                                          "--proxy-access-log", "{config_dir}/a.log"])
    assert result.exit_code == 0, result.output
    assert seen == [ProxyOptions(command="squid -f {config_dir}/s.conf", listen="127.0.0.2:3128", auth_file=auth,
                                 config=(tmp_path, auth), user="proxy", access_log="{config_dir}/a.log")]


def test_conformance_refuses_bad_proxy_options_before_any_lab_starts(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--proxy-command", "squid",
                             "--proxy-url", "http://127.0.0.1:3128"], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert result.returncode == 2 and "exclude each other" in result.stderr
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--proxy-url",
                             "http://vendor:hunter2@127.0.0.1:3128"], capture_output=True, text=True, timeout=60,
                            cwd=tmp_path)
    assert result.returncode == 2 and "--proxy-auth-file" in result.stderr
    assert "hunter2" not in result.stderr
