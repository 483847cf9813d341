"""What a Windows node's curl.exe and crictl.exe read (traffic end to end: test_traffic): crictl
reaches containerd's named pipe, takes every word after ``--`` as an image, and reads
containerd's environment case-insensitively; curl.exe speaks Schannel's words and names files by
the session's paths."""

from __future__ import annotations

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_crictl_takes_every_word_after_double_dash_as_an_image(machine: WindowsMachine) -> None:
    operand = await ps(machine, "crictl.exe pull -- --creds")
    assert "parse reference '--creds': invalid reference format" in operand.stderr  # Go's flag parsing
    pulled = await ps(machine, "crictl.exe pull -- quay.io/a:1")
    assert "lookup quay.io: no such host" in pulled.stderr


async def test_crictl_without_containerd_cannot_open_its_pipe(machine: WindowsMachine) -> None:
    result = await ps(machine, "Stop-Service containerd -Force; crictl.exe pull quay.io/a:1")
    assert result.exit_code == 1
    assert ('for endpoint \\"npipe:////./pipe/containerd-containerd\\": rpc error: code = Unavailable desc = '
            'connection error: desc = \\"transport: Error while dialing: open \\\\\\\\.\\\\pipe\\\\'
            'containerd-containerd: The system cannot find the file specified.\\""') in result.stderr


async def test_curl_exe_reads_proxy_variables_case_insensitively(machine: WindowsMachine) -> None:
    # Windows' environment names are case-insensitive: HTTP_PROXY is curl.exe's http_proxy
    result = await ps(machine, "$env:HTTP_PROXY = 'http://proxy.corp.internal:3128'; curl.exe -sSv http://a.example/")
    assert "* Uses proxy env variable http_proxy == 'http://proxy.corp.internal:3128'" in result.stderr
    version = await ps(machine, "curl.exe --version")
    assert version.stdout.startswith("curl 8.7.1 (Windows) libcurl/8.7.1 Schannel")
