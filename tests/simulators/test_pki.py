"""The lab's CAs: a renewed CA keeps its subject, not its thumbprint, and issues working leaves."""

import contextlib
import ssl

import trustme
from cryptography import x509

from proxyfleet.core.certificates import Certificate, certificates_in_bundle
from proxyfleet.simulators.pki import new_mitm_ca, public_roots, renewed_ca, system_bundle_pem


def test_a_renewed_ca_has_the_same_subject_and_another_thumbprint() -> None:
    old = new_mitm_ca()
    new = renewed_ca(old)
    before, after = Certificate.from_pem(old.cert_pem.bytes()), Certificate.from_pem(new.cert_pem.bytes())
    assert before.subject == after.subject
    assert before.thumbprint != after.thumbprint
    parsed = x509.load_pem_x509_certificate(new.cert_pem.bytes())
    assert parsed.extensions.get_extension_for_class(x509.BasicConstraints).value.ca


def test_a_renewed_ca_issues_leaves_a_client_trusting_only_it_accepts() -> None:
    new = renewed_ca(new_mitm_ca())
    leaf = new.issue_cert("quay.io")
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    leaf.configure_cert(server)
    client = ssl.create_default_context(cadata=new.cert_pem.bytes().decode())
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls_client = client.wrap_bio(incoming, outgoing, server_hostname="quay.io")
    tls_server = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):  # a handshake in memory: no sockets, no timing
        for side in (tls_client, tls_server):
            with contextlib.suppress(ssl.SSLWantReadError):
                side.do_handshake()
        s_in.write(outgoing.read())
        incoming.write(s_out.read())
    assert tls_client.getpeercert()["subject"]  # verified against the renewed CA


def test_the_public_root_set_is_production_sized() -> None:
    assert 100 <= len(public_roots()) <= 250  # certifi: ~120-150 over the years
    assert all(c.is_ca for c in public_roots())


def test_the_system_bundle_adds_the_lab_public_ca() -> None:
    ca = trustme.CA().cert_pem.bytes().decode()
    bundle = certificates_in_bundle(system_bundle_pem(ca).encode())
    assert len(bundle) == len(public_roots()) + 1
