"""Deliberately broken reconcilers, each reproducing a real failure mode, so the conformance
suites can prove they catch it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Variant:
    name: str
    description: str
    semicolon_noproxy: bool = False
    no_reboot: bool = False
    early_reachability: bool = False
    no_cert_import: bool = False
    no_cert_removal: bool = False
    no_env_removal: bool = False
    unquoted_values: bool = False
    no_service_wait: bool = False
    reboot_without_exit_status: bool = False
    records_whole_bundle: bool = False


CORRECT = Variant("correct", "the reference reconciler")
VARIANTS: dict[str, Variant] = {v.name: v for v in (
    CORRECT,
    Variant("semicolon-noproxy", "joins NO_PROXY with ';' (WinINet style): no client splits on it",
            semicolon_noproxy=True),
    Variant("no-reboot", "writes the registry but never reboots: services keep the old environment",
            no_reboot=True),
    Variant("early-reachability", "treats the node as back right after issuing the reboot",
            early_reachability=True),
    Variant("no-cert-import", "never imports the trusted CA bundle", no_cert_import=True),
    Variant("no-cert-removal", "never removes certificates it imported (rotation leaves the old CA)",
            no_cert_removal=True),
    Variant("no-env-removal", "never deletes proxy variables (removal leaves them behind)",
            no_env_removal=True),
    Variant("unquoted-values", "interpolates cluster values into PowerShell unescaped",
            unquoted_values=True),
    Variant("records-whole-bundle", "records every bundle certificate as its own import, so built-in roots "
                                    "that are also in the bundle are deleted when the proxy goes (as WMCO does)",
            records_whole_bundle=True),
    Variant("no-service-wait", "verifies once right after SSH returns and reboots again when the "
                               "services are not up yet (sshd starts first)", no_service_wait=True),
    Variant("reboot-without-exit-status", "reads a Restart-Computer that returned no exit status as a failure "
                                          "and reboots again (OCPBUGS-90077)", reboot_without_exit_status=True),
)}


def variant(name: str | None) -> Variant:
    if name is None:
        return CORRECT
    try:
        return VARIANTS[name]
    except KeyError:
        raise ValueError(f"unknown reconciler variant {name!r}; choose one of "
                         + ", ".join(sorted(VARIANTS))) from None
