"""The PowerShell the reconciler sends: constant code, never data.

The values it acts on (proxy URLs with their credentials, certificates, the import record)
travel as a data file over SFTP (``NodeConnection.script(..., data=...)``) and reach the script as
``$data``: nothing cluster-supplied is ever parsed as code or shown on a command line. The only
things spliced into script text are constants and hexadecimal thumbprints checked here.
"""

from __future__ import annotations

import re
from typing import Any

from proxyfleet.core.contract import EGRESS_SERVICES
from proxyfleet.core.nodessh import BOOT_SCRIPT, read_variables_script, services_script
from proxyfleet.harness.reconciler.desired import ChangePlan

BUNDLE_PATH = r"C:\k\ca-bundle.crt"
# This reconciler's own import record: one thumbprint per line (not WMCO's imported-certs.pem,
# which records the whole bundle, built-in roots included).
RECORD_PATH = r"C:\k\proxyfleet-imported-certs.txt"
CERT_DIR = r"C:\k\certs"
_THUMBPRINT = re.compile(r"^[0-9A-F]{40}$")


def _thumbprint(value: str) -> str:
    if not _THUMBPRINT.match(value):
        raise ValueError(f"not a certificate thumbprint: {value!r}")
    return value


def observe_script() -> str:
    """One round trip: machine variables, Root store, own import record, bundle hash, boot."""
    return ("$ErrorActionPreference = 'Stop'\n"
            + read_variables_script("Machine") +
            "$root = @(Get-ChildItem -Path Cert:\\LocalMachine\\Root | Select-Object -ExpandProperty Thumbprint)\n"
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


# Certificates leave the Root store by thumbprint: a CA renewed under the same subject is another
# certificate. (The "removes-by-subject" variant removes every one with the subject instead.)
_REMOVE_BY_THUMBPRINT = (
    "foreach ($thumbprint in @($data.remove)) {\n"
    "  $path = 'Cert:\\LocalMachine\\Root\\' + $thumbprint\n"
    "  if (Test-Path -Path $path) { Remove-Item -Path $path; $changed.removed += [string]$thumbprint }\n"
    "}\n")
_REMOVE_BY_SUBJECT = (
    "foreach ($thumbprint in @($data.remove)) {\n"
    "  $path = 'Cert:\\LocalMachine\\Root\\' + $thumbprint\n"
    "  if (Test-Path -Path $path) {\n"
    "    $subject = (Get-Item -Path $path).Subject\n"
    "    Get-ChildItem -Path Cert:\\LocalMachine\\Root | Where-Object { $_.Subject -eq $subject } | Remove-Item\n"
    "    $changed.removed += [string]$thumbprint\n"
    "  }\n"
    "}\n")


APPLY_SCRIPT = (
    "$changed = [ordered]@{ set = @(); deleted = @(); imported = @(); removed = @() }\n"
    # Record own imports first (a superset is safe): a crash mid-way never orphans one.
    f"[IO.File]::WriteAllText('{RECORD_PATH}', [string]$data.record_before)\n"
    "foreach ($variable in @($data.set)) {\n"
    "  [Environment]::SetEnvironmentVariable([string]$variable.name, [string]$variable.value, 'Machine')\n"
    "  $changed.set += [string]$variable.name\n"
    "}\n"
    "foreach ($name in @($data.delete)) {\n"
    "  [Environment]::SetEnvironmentVariable([string]$name, $null, 'Machine')\n"
    "  $changed.deleted += [string]$name\n"
    "}\n"
    f"if (@($data.import).Count -gt 0) {{ $null = New-Item -ItemType Directory -Path '{CERT_DIR}' -Force }}\n"
    "foreach ($certificate in @($data.import)) {\n"
    # Import-Certificate reads a file: write each one, import it, and remove the file again.
    f"  $file = '{CERT_DIR}\\' + [string]$certificate.thumbprint + '.crt'\n"
    "  [IO.File]::WriteAllText($file, [string]$certificate.pem)\n"
    "  $null = Import-Certificate -FilePath $file -CertStoreLocation Cert:\\LocalMachine\\Root\n"
    "  Remove-Item -LiteralPath $file -Force\n"
    "  $changed.imported += [string]$certificate.thumbprint\n"
    "}\n"
    + _REMOVE_BY_THUMBPRINT +
    f"[IO.File]::WriteAllText('{RECORD_PATH}', [string]$data.record_after)\n"
    # No proxy and no import of ours left: leave nothing of ours behind.
    "if ($data.cleanup) {\n"
    f"  foreach ($file in @('{BUNDLE_PATH}', '{RECORD_PATH}')) {{\n"
    "    if (Test-Path -LiteralPath $file) { Remove-Item -LiteralPath $file -Force }\n"
    "  }\n"
    f"  if (Test-Path -LiteralPath '{CERT_DIR}') {{ Remove-Item -LiteralPath '{CERT_DIR}' -Recurse -Force }}\n"
    "}\n"
    "$changed | ConvertTo-Json -Compress\n")


def apply_script() -> str:
    """One round trip: record own imports, set and delete machine variables, import and remove
    certificates, write the final record, report what changed. Acts on ``apply_data(plan)``."""
    return APPLY_SCRIPT


def apply_data(plan: ChangePlan) -> dict[str, Any]:
    """The data file of one apply: values as data, thumbprints checked."""
    return {
        "set": [{"name": name, "value": plan.set_environment[name]} for name in sorted(plan.set_environment)],
        "delete": sorted(plan.delete_environment),
        "import": [{"thumbprint": _thumbprint(c.thumbprint), "pem": c.pem()} for c in plan.import_certificates],
        "remove": [_thumbprint(t) for t in plan.remove_certificates],
        "record_before": "".join(f"{_thumbprint(t)}\n" for t in plan.record_before),
        "record_after": "".join(f"{_thumbprint(t)}\n" for t in plan.record_after),
        "cleanup": plan.cleanup,
    }


def by_subject_apply_script() -> str:
    """The "removes-by-subject" broken variant's apply script."""
    return APPLY_SCRIPT.replace(_REMOVE_BY_THUMBPRINT, _REMOVE_BY_SUBJECT)


def unquoted_apply_script(plan: ChangePlan) -> str:
    """The "unquoted-values" broken variant: splices each value into a double-quoted PowerShell
    string, where ``$(...)`` runs — the injection the data file exists to prevent (and the values
    travel on the command line)."""
    lines = []
    for name in sorted(plan.set_environment):
        lines.append(f"[Environment]::SetEnvironmentVariable('{name}', \"{plan.set_environment[name]}\", 'Machine')")
        lines.append(f"$changed.set += '{name}'")
    spliced = "\n".join(lines) + "\nforeach ($variable in @()) {"
    return APPLY_SCRIPT.replace("foreach ($variable in @($data.set)) {", spliced)


def wait_for_services_script(within: float) -> str:
    """PowerShell that waits, on the node, for each egress service to be Running (each up to an
    equal share of ``within`` seconds, so the whole wait never outlasts it; a service that does
    not come, or does not exist, is left to the report that follows). ``ServiceController.
    WaitForStatus`` is .NET's own wait: one round trip instead of a poll every ``service_poll``."""
    share = max(0.0, within) / len(EGRESS_SERVICES)
    tenths = int(share * 10)  # whole tenths: a handful of distinct script texts, never more
    seconds = tenths // 10
    timeout = (f"{seconds // 86400}.{seconds // 3600 % 24:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
               f".{tenths % 10}")  # d.hh:mm:ss.f: TimeSpan refuses hours past 23
    names = ",".join(f"'{n}'" for n in EGRESS_SERVICES)
    return (f"foreach ($name in @({names})) {{\n"
            "  $service = Get-Service -Name $name -ErrorAction SilentlyContinue\n"
            f"  if ($service) {{ try {{ $service.WaitForStatus('Running', '{timeout}') }} catch {{ }} }}\n"
            "}\n")


def verify_script(wait: float | None = None) -> str:
    """After the reboot, in a fresh session: the variables at process scope, boot, services —
    with ``wait``, once the services are running or ``wait`` seconds have passed."""
    return ("$ErrorActionPreference = 'Stop'\n"
            + (wait_for_services_script(wait) if wait is not None else "")
            + read_variables_script("Process") +
            f"$boot = {BOOT_SCRIPT}\n"
            + services_script() +
            "[ordered]@{ environment = $environment; boot = $boot; services = $services } "
            "| ConvertTo-Json -Compress -Depth 4\n")


