"""The files a Linux node gets for the cluster's proxy: the MCO's layout, every value read back by
systemd's own rules exactly as given, both spellings, removal when the proxy goes."""

from __future__ import annotations

import pytest

from proxyfleet.core.systemd.execenvironment import Warnings, load_environment_file
from proxyfleet.harness.reconciler.linuxfiles import (
    DEBIAN,
    DROP_IN_TEXT,
    PROXY_ENV,
    PROXY_ENV_HEADER,
    RHCOS,
    node_files,
    proxy_env_text,
)
from proxyfleet.simulators.linux.noderoot import MCO_PROXY_ENV

PROXY = {"HTTP_PROXY": "http://proxy.corp:3128", "HTTPS_PROXY": "http://proxy.corp:3128",
         "NO_PROXY": ".cluster.local,.svc,10.0.0.0/16"}


@pytest.mark.parametrize("value", [
    "http://user:p%40ss@proxy.corp:3128",  # percent-encoded: fine in an environment file
    'http://us"er:pa\\ss@proxy:3128',  # a quote and a backslash the MCO's bare value would lose
    "http://u:$HOME`x`@proxy:3128",
    "http://u:it's #not a comment@proxy:3128",
    "  leading and trailing spaces  ",
])
def test_systemd_reads_back_every_value_exactly(value: str) -> None:
    text = proxy_env_text({"HTTP_PROXY": value, "HTTPS_PROXY": None, "NO_PROXY": "a,b"})
    warnings = Warnings()
    assert load_environment_file(text, PROXY_ENV, warnings) == {
        "HTTP_PROXY": value, "http_proxy": value, "NO_PROXY": "a,b", "no_proxy": "a,b"}
    assert warnings.lines == []


def test_a_configured_rhcos_node_gets_the_mcos_files_in_both_spellings() -> None:
    files = node_files(PROXY, "-----BEGIN CERTIFICATE-----\n", RHCOS)
    assert files[PROXY_ENV].content is not None and files[PROXY_ENV].mode == 0o600
    assert files[PROXY_ENV].content.startswith(PROXY_ENV_HEADER)
    assert 'https_proxy="http://proxy.corp:3128"\n' in files[PROXY_ENV].content
    assert {p: f.content for p, f in files.items() if p.endswith(".conf")} == {
        "/etc/systemd/system/crio.service.d/10-mco-default-env.conf": DROP_IN_TEXT,
        "/etc/systemd/system/kubelet.service.d/10-mco-default-env.conf": DROP_IN_TEXT}
    anchor = files["/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"]
    assert anchor.mode == 0o600 and anchor.content == "-----BEGIN CERTIFICATE-----\n"


def test_without_a_proxy_the_drop_ins_and_the_anchor_go_and_the_env_file_keeps_its_comment_on_rhcos() -> None:
    files = node_files(dict.fromkeys(PROXY), "", RHCOS)
    assert files[PROXY_ENV].content == PROXY_ENV_HEADER == MCO_PROXY_ENV  # what the MCO keeps there from install
    assert [p for p, f in files.items() if f.content is None] == [
        "/etc/systemd/system/crio.service.d/10-mco-default-env.conf",
        "/etc/systemd/system/kubelet.service.d/10-mco-default-env.conf",
        "/etc/pki/ca-trust/source/anchors/openshift-config-user-ca-bundle.crt"]


def test_on_a_capi_node_without_a_proxy_the_env_file_goes_too_no_mco_keeps_it_there() -> None:
    files = node_files(dict.fromkeys(PROXY), "", DEBIAN)
    assert [p for p, f in files.items() if f.content is None] == [
        PROXY_ENV,
        "/etc/systemd/system/containerd.service.d/10-mco-default-env.conf",
        "/etc/systemd/system/kubelet.service.d/10-mco-default-env.conf",
        "/usr/local/share/ca-certificates/openshift-config-user-ca-bundle.crt"]
