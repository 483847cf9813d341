"""The PowerShell the reconciler sends, generated from plain data.

Cluster-supplied text never becomes code: every value travels Base64-encoded and is decoded on
the node (``[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('...'))``); the only
things spliced into the script are constants and hexadecimal thumbprints. Scripts are sent as
``powershell.exe -EncodedCommand``, which works whatever the host's OpenSSH default shell is.
"""

from __future__ import annotations

import base64
import re

from harness.nodessh import BOOT_SCRIPT, read_variables_script, services_script
from harness.reconciler.desired import ChangePlan
from simulators.windows.certificates import Certificate

BUNDLE_PATH = r"C:\k\ca-bundle.crt"
RECORD_PATH = r"C:\k\imported-certs.pem"
CERT_DIR = r"C:\k\certs"
_THUMBPRINT = re.compile(r"^[0-9A-F]{40}$")


def _literal(text: str) -> str:
    """A value as an expression that decodes it on the node — never parsed as code."""
    encoded = base64.b64encode(text.encode("utf-8")).decode("ascii")
    return f"[Text.Encoding]::UTF8.GetString([Convert]::FromBase64String('{encoded}'))"


def _thumbprint(value: str) -> str:
    if not _THUMBPRINT.match(value):
        raise ValueError(f"not a certificate thumbprint: {value!r}")
    return value


def _record(certificates: list[Certificate]) -> str:
    return "".join(c.pem() for c in certificates)


def observe_script() -> str:
    """One round trip: machine variables, Root store, own import record, bundle hash, boot."""
    return ("$ErrorActionPreference = 'Stop'\n"
            + read_variables_script("Machine") +
            "$root = @(Get-ChildItem -Path Cert:\\LocalMachine\\Root | ForEach-Object { $_.Thumbprint })\n"
            "$imported = ''\n"
            f"if (Test-Path -Path '{RECORD_PATH}') {{ $imported = [IO.File]::ReadAllText('{RECORD_PATH}') }}\n"
            "$bundle = $null\n"
            f"if (Test-Path -Path '{BUNDLE_PATH}') {{ $bundle = (Get-FileHash -Path '{BUNDLE_PATH}' "
            "-Algorithm SHA256).Hash }\n"
            f"$boot = {BOOT_SCRIPT}\n"
            + services_script() +
            "[ordered]@{ hostname = [Environment]::MachineName; environment = $environment; root = $root; "
            "imported = $imported; bundle = $bundle; boot = $boot; services = $services } "
            "| ConvertTo-Json -Compress -Depth 4\n")


def apply_script(plan: ChangePlan, unquoted: bool = False) -> str:
    """One round trip: record own imports first (a superset is safe), set and delete machine
    variables, import and remove certificates, write the final record, report what changed."""
    lines = ["$ErrorActionPreference = 'Stop'",
             "$changed = [ordered]@{ set = @(); deleted = @(); imported = @(); removed = @() }",
             f"[IO.File]::WriteAllText('{RECORD_PATH}', {_literal(_record(plan.record_before))})"]
    for name in sorted(plan.set_environment):
        value = plan.set_environment[name]
        # The broken "unquoted-values" variant splices the value into a double-quoted string,
        # where $(...) runs: the injection this design exists to prevent.
        expression = f'"{value}"' if unquoted else _literal(value)
        lines.append(f"[Environment]::SetEnvironmentVariable('{name}', {expression}, 'Machine')")
        lines.append(f"$changed.set += '{name}'")
    for name in sorted(plan.delete_environment):
        lines.append(f"[Environment]::SetEnvironmentVariable('{name}', $null, 'Machine')")
        lines.append(f"$changed.deleted += '{name}'")
    for certificate in plan.import_certificates:
        thumbprint = _thumbprint(certificate.thumbprint)
        lines.append(f"$null = Import-Certificate -FilePath '{CERT_DIR}\\{thumbprint}.crt' "
                     "-CertStoreLocation Cert:\\LocalMachine\\Root")
        lines.append(f"$changed.imported += '{thumbprint}'")
    for thumbprint in plan.remove_certificates:
        path = f"Cert:\\LocalMachine\\Root\\{_thumbprint(thumbprint)}"
        lines.append(f"if (Test-Path -Path '{path}') {{ Remove-Item -Path '{path}'; "
                     f"$changed.removed += '{thumbprint}' }}")
    lines.append(f"[IO.File]::WriteAllText('{RECORD_PATH}', {_literal(_record(plan.record_after))})")
    lines.append("$changed | ConvertTo-Json -Compress")
    return "\n".join(lines) + "\n"


def verify_script() -> str:
    """After the reboot, in a fresh session: the variables at process scope, boot, services."""
    return ("$ErrorActionPreference = 'Stop'\n"
            + read_variables_script("Process") +
            f"$boot = {BOOT_SCRIPT}\n"
            + services_script() +
            "[ordered]@{ environment = $environment; boot = $boot; services = $services } "
            "| ConvertTo-Json -Compress -Depth 4\n")


