"""``Import-Certificate`` (the PKI module), with Windows' error codes."""

from __future__ import annotations

from typing import Any

from proxyfleet.core.certificates import CertificateFormatError
from proxyfleet.simulators.windows.certstores import certificate_from_file
from proxyfleet.simulators.windows.powershell.binding import CmdletSpec, Param
from proxyfleet.simulators.windows.powershell.context import CommandContext
from proxyfleet.simulators.windows.powershell.providers import (
    CERTIFICATE,
    FILESYSTEM,
    PathProblem,
    certificate_item,
    resolve,
)

_TYPE = "Microsoft.CertificateServices.Commands.ImportCertificateCommand"


def _com_error(ctx: CommandContext, message: str, target: str) -> None:
    ctx.error(message, "System.Runtime.InteropServices.COMException", "NotSpecified",
              "COMException", target)


async def import_certificate(ctx: CommandContext, args: dict[str, Any]) -> None:
    file_text = args["FilePath"]
    store_text = args.get("CertStoreLocation") or ctx.session.location
    try:
        file_path = resolve(ctx.session, file_text)
        store_path = resolve(ctx.session, store_text)
    except PathProblem as problem:
        _com_error(ctx, str(problem), file_text)
        return
    parts = [p for p in store_path.path.split("\\") if p]
    machine = ctx.session.machine
    store = machine.stores.get(parts[0], parts[1]) if (
        store_path.provider == CERTIFICATE and len(parts) == 2) else None
    if store is None:
        _com_error(ctx, "The system cannot find the path specified. 0x80070003 (WIN32: 3 "
                        "ERROR_PATH_NOT_FOUND)", store_text)
        return
    fs = machine.filesystem
    if file_path.provider != FILESYSTEM or not fs.exists(file_path.path) or fs.is_dir(file_path.path):
        _com_error(ctx, "The system cannot find the file specified. 0x80070002 (WIN32: 2 "
                        "ERROR_FILE_NOT_FOUND)", file_text)
        return
    try:
        certificate = certificate_from_file(fs.read_bytes(file_path.path))
    except CertificateFormatError:
        _com_error(ctx, "Cannot find the requested object. 0x80092009 (-2146885623 "
                        "CRYPT_E_NOT_FOUND)", file_text)
        return
    store.add(certificate)
    ctx.write(certificate_item(store.location, store.name, certificate))


CMDLETS = (
    CmdletSpec("Import-Certificate", _TYPE, import_certificate, (
        Param("FilePath", "string", position=0, mandatory=True, aliases=("FullName",),
              by_property=True),
        Param("CertStoreLocation", "string"),
        Param("Exportable", "switch")), should_process=True),
)
