"""The bring-your-own-proxy options as given: checked before any lab starts, secrets read from
files, travelling between processes as paths only."""

import json
from pathlib import Path

import pytest
import trustme

from proxyfleet.harness.lab.vendor import VendorProxyError
from proxyfleet.harness.lab.vendoroptions import ProxyOptions
from proxyfleet.simulators.network import Endpoint


def test_the_options_travel_as_paths_and_are_read_on_the_other_side(tmp_path: Path) -> None:
    auth = tmp_path / "auth"
    auth.write_text("vendor:pa$$ word:with colon\n")
    ca = tmp_path / "ca.pem"
    ca.write_bytes(trustme.CA().cert_pem.bytes())
    options = ProxyOptions(command="squid -N -n {instance} -f {config_dir}/squid.conf", listen="127.0.0.9:3128",
                           ca_file=ca, auth_file=auth, config=(tmp_path,), user="proxy", log_format="combined",
                           unbound_egress=True)
    written = options.write(tmp_path / "options.json").read_text()
    assert "pa$$" not in written  # the credentials stay in their file
    again = ProxyOptions.from_json(json.loads(written))
    assert again == options and again.serial and again.given
    spec = again.spec()
    assert spec.auth == "vendor:pa$$ word:with colon" and spec.listen == Endpoint("127.0.0.9", 3128)
    assert spec.ca_pem == ca.read_bytes() and spec.config_files == (tmp_path,)
    assert spec.log_format == "combined" and ProxyOptions(command="x").spec().log_format == "auto"
    assert spec.unbound_egress and not ProxyOptions(command="x").spec().unbound_egress
    assert not ProxyOptions(command="x").serial and not ProxyOptions().given


@pytest.mark.parametrize(("options", "message"), [
    (ProxyOptions(command="squid", url="http://127.0.0.1:3128"), "excludes --proxy-command"),
    (ProxyOptions(url="http://u:p@127.0.0.1:3128"), "must not carry credentials"),
    (ProxyOptions(command="squid", listen="3128"), "not ADDRESS:PORT"),
    (ProxyOptions(command="squid", listen="192.168.1.1:3128"), "not a loopback address"),
    (ProxyOptions(command="squid", log_format="(?P<client>"), "--proxy-log-format: not a regular expression"),
    (ProxyOptions(command="squid", log_format="apache"), r"--proxy-log-format: no \(\?P<client>"),
])
def test_bad_options_are_named(options: ProxyOptions, message: str) -> None:
    with pytest.raises(VendorProxyError, match=message):
        options.spec()


def test_bad_files_are_named(tmp_path: Path) -> None:
    not_pem = tmp_path / "ca.pem"
    not_pem.write_text("-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n")
    with pytest.raises(VendorProxyError, match="--proxy-ca"):
        ProxyOptions(command="squid", ca_file=not_pem).spec()
    empty = tmp_path / "empty.pem"
    empty.write_text("")
    with pytest.raises(VendorProxyError, match="--proxy-ca"):
        ProxyOptions(command="squid", ca_file=empty).spec()
    for text in ("no-colon", ":nouser", "a:b\nc:d"):
        auth = tmp_path / "auth"
        auth.write_text(text)
        with pytest.raises(VendorProxyError, match="user:password") as error:
            ProxyOptions(command="squid", auth_file=auth).spec()
        assert "nouser" not in str(error.value) and "c:d" not in str(error.value)
    with pytest.raises(VendorProxyError, match="--proxy-auth-file"):
        ProxyOptions(command="squid", auth_file=tmp_path / "missing").spec()
    with pytest.raises(VendorProxyError, match="--proxy-tls-ca"):
        ProxyOptions(url="http://127.0.0.1:3128", tls_port=3129, tls_ca_file=empty).spec()


def test_a_running_proxys_tls_ca_is_read(tmp_path: Path) -> None:
    ca = tmp_path / "tls-ca.pem"
    ca.write_bytes(trustme.CA().cert_pem.bytes())
    spec = ProxyOptions(url="http://127.0.0.1:3128", tls_port=3129, tls_ca_file=ca).spec()
    assert spec.tls_port == 3129 and spec.tls_ca_pem == ca.read_bytes()
