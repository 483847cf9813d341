"""The exec commands of a node's traffic probes: ``curl.exe`` fetching a URL, ``crictl.exe`` pulling
an image.

Each runs in a fresh Windows PowerShell (``powershell.exe -EncodedCommand``, as every other probe
script), whatever OpenSSH's default shell is: the user's value is a single-quoted literal in the
script, so it is data — no shell ever reads it as text (cmd.exe, Windows' default, would run
whatever follows an ``&`` in it). The script exits with the program's own exit status, so the
probe's verdict is curl's (crictl's), never that of something run after it.

The value still reaches the node's process list inside the encoded command (as before, in the
clear): ``core.probetargets`` admits no URL with credentials, and nothing else in it is secret.
"""

from __future__ import annotations

from collections.abc import Sequence

from proxyfleet.core.nodessh import encoded_command
from proxyfleet.core.powershell import powershell_literal
from proxyfleet.core.probetargets import check_image, check_url


def native_call_script(program: str, options: Sequence[str], value: str) -> str:
    """PowerShell that runs ``program options -- value`` and exits with its exit status; 1 when it
    could not start (``$LASTEXITCODE`` then stays ``$null``, and ``exit $null`` would exit 0).
    ``--`` ends curl's and crictl's options, so ``value`` is an operand even if it looked like one;
    it is quoted because PowerShell itself takes a bare ``--`` for its own end of parameters
    (swallowing it for cmdlets, scripts and, in some versions, programs)."""
    return (f"$value = {powershell_literal(value)}\n"
            f"& {powershell_literal(program)} {' '.join(options)} '--' $value\n"
            "if ($null -eq $LASTEXITCODE) { exit 1 }\n"
            "exit $LASTEXITCODE\n")


def fetch_command(url: str) -> str:
    """``curl.exe -sS -f -- URL`` on a node; raises ``ProbeTargetError`` for a URL that
    ``check_url`` refuses (nothing is sent)."""
    return encoded_command(native_call_script("curl.exe", ["-sS", "-f"], check_url(url)))


def pull_command(image: str) -> str:
    """``crictl.exe pull -- IMAGE`` on a node (found on the PATH, as an administrator types it;
    the containerd CRI endpoint is its default); raises ``ProbeTargetError`` for a reference
    ``check_image`` refuses."""
    check_image(image)
    return encoded_command(native_call_script("crictl.exe", ["pull"], image))
