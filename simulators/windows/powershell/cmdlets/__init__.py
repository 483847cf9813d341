"""The cmdlets of the supported subset, one module per area."""

from __future__ import annotations

from proxyfleet.simulators.windows.powershell.binding import CmdletSpec
from proxyfleet.simulators.windows.powershell.cmdlets import certificates, content, items, objects, system, web

ALL_CMDLETS: tuple[CmdletSpec, ...] = (
    *items.CMDLETS,
    *content.CMDLETS,
    *certificates.CMDLETS,
    *system.CMDLETS,
    *objects.CMDLETS,
    *web.CMDLETS,
)
