"""Property: any file handed to ``up``/``repro`` (a Proxy object, an install-config, a CA bundle)
is accepted or refused with one ``InputError`` — never another exception — and a refusal never
echoes the file's values (they may carry credentials)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from proxyfleet.harness.cli.inputs import InputError, read_ca_bundle, read_install_config, read_proxy
from tests.fuzz.strategies import EXAMPLES, json_documents

_WORKDIR = tempfile.TemporaryDirectory(prefix="proxyfleet-inputs-fuzz-")  # deleted at exit
WORK = Path(_WORKDIR.name)
SECRET = "Zq8s3cretZq8"  # planted in every document: it must never come back in an error
urls = st.one_of(st.sampled_from([f"http://u:{SECRET}@proxy.corp:3128", f"https://u:{SECRET}@p:1",
                                  "http://[::1]:99999", "ftp://x", "proxy:3128", "", "http://a b"]),
                 st.text(max_size=12))
proxy_specs = st.fixed_dictionaries({}, optional={"httpProxy": urls, "httpsProxy": urls,
                                                  "noProxy": st.one_of(st.text(max_size=20), json_documents(3)),
                                                  "trustedCA": json_documents(3), "readinessEndpoints": json_documents(3)})
install_configs = st.fixed_dictionaries({}, optional={
    "apiVersion": st.just("v1"), "baseDomain": st.one_of(st.just("example.com"), json_documents(2)),
    "metadata": json_documents(3), "networking": json_documents(6), "platform": json_documents(3),
    "proxy": st.one_of(proxy_specs, json_documents(3)), "additionalTrustBundle": json_documents(2),
    "additionalTrustBundlePolicy": st.one_of(st.sampled_from(["Proxyonly", "Always"]), json_documents(1))})


def _file(name: str, document: Any) -> Path:
    path = WORK / name
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def _refused_cleanly(error: InputError) -> None:
    text = str(error)
    assert "\n" not in text and SECRET not in text, text


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.one_of(st.fixed_dictionaries({"kind": st.just("Proxy"), "spec": proxy_specs}), json_documents()))
def test_proxy_files(document: Any) -> None:
    try:
        read_proxy(_file("proxy.yaml", document))
    except InputError as error:
        _refused_cleanly(error)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.one_of(install_configs, json_documents()))
def test_install_configs(document: Any) -> None:
    try:
        read_install_config(_file("install-config.yaml", document))
    except InputError as error:
        _refused_cleanly(error)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(st.sampled_from([
    "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----", "MIIB", "====", "!!", "\n", "QUJD"]), max_size=12).map("".join)))
def test_ca_bundles(text: str) -> None:
    try:
        read_ca_bundle(_file("bundle.pem", text))
    except InputError as error:
        _refused_cleanly(error)
