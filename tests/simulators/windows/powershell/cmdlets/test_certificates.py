"""Import-Certificate and the Cert: drive: PEM and DER, the first certificate of a bundle, Windows' errors for garbage, removal through the pipeline."""

from __future__ import annotations

import hashlib

import trustme

from proxyfleet.simulators.windows.machine import WindowsMachine
from tests.support import ps


async def test_import_certificate_pem_and_der_then_remove(machine: WindowsMachine) -> None:
    ca = trustme.CA()
    pem = _ca_pem(ca)
    import ssl

    der = ssl.PEM_cert_to_DER_cert(pem.decode())
    thumbprint = hashlib.sha1(der).hexdigest().upper()
    machine.filesystem.write_bytes("C:\\k\\ca.pem", pem)
    machine.filesystem.write_bytes("C:\\k\\ca.cer", der)
    result = await ps(machine, "Import-Certificate -FilePath C:\\k\\ca.pem -CertStoreLocation "
                               "Cert:\\LocalMachine\\Root | Select-Object -ExpandProperty Thumbprint")
    assert result.stdout.strip() == thumbprint
    assert machine.stores.machine_root.get(thumbprint) is not None
    again = await ps(machine, "(Import-Certificate C:\\k\\ca.cer -CertStoreLocation Cert:\\LocalMachine\\Root).Thumbprint")
    assert again.stdout.strip() == thumbprint
    assert len(machine.stores.machine_root.certificates) == 1  # one copy, as Windows keeps
    listed = await ps(machine, "Get-ChildItem Cert:\\LocalMachine\\Root | ForEach-Object Thumbprint")
    assert listed.stdout.split() == [thumbprint]
    assert (await ps(machine, f"Test-Path Cert:\\LocalMachine\\Root\\{thumbprint}")).stdout.strip() == "True"
    await ps(machine, f"Remove-Item Cert:\\LocalMachine\\Root\\{thumbprint}")
    assert machine.stores.machine_root.get(thumbprint) is None


async def test_import_certificate_reads_only_the_first_certificate_of_a_bundle(machine: WindowsMachine) -> None:
    first, second = trustme.CA(), trustme.CA()
    machine.filesystem.write_bytes("C:\\k\\bundle.crt", _ca_pem(first) + _ca_pem(second))
    await ps(machine, "Import-Certificate -FilePath C:\\k\\bundle.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
    assert len(machine.stores.machine_root.certificates) == 1


async def test_import_certificate_of_garbage_fails_like_windows(machine: WindowsMachine) -> None:
    machine.filesystem.write_bytes("C:\\k\\junk.crt", b"not a certificate at all")
    result = await ps(machine, "Import-Certificate -FilePath C:\\k\\junk.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
    assert result.exit_code == 1
    assert "Cannot find the requested object. 0x80092009 (-2146885623 CRYPT_E_NOT_FOUND)" in result.stderr
    missing = await ps(machine, "Import-Certificate -FilePath C:\\k\\none.crt -CertStoreLocation Cert:\\LocalMachine\\Root")
    assert "The system cannot find the file specified." in missing.stderr
    assert machine.stores.machine_root.certificates == {}


async def test_certificate_pipeline_removal(machine: WindowsMachine) -> None:
    for index in range(3):
        machine.filesystem.write_bytes(f"C:\\k\\c{index}.pem", _ca_pem(trustme.CA(organization_name=f"org{index}")))
        await ps(machine, f"Import-Certificate C:\\k\\c{index}.pem -CertStoreLocation Cert:\\LocalMachine\\Root")
    await ps(machine, "Get-ChildItem Cert:\\LocalMachine\\Root | Where-Object { $_.Subject -like '*org1*' } | Remove-Item")
    subjects = [c.subject for c in machine.stores.machine_root.certificates.values()]
    assert len(subjects) == 2 and not any("org1" in s for s in subjects)


def _ca_pem(ca: trustme.CA) -> bytes:
    return ca.cert_pem.bytes()
