"""Reading a kubeconfig: the current context's server, CA and token, or one clear error; and the
lab's refusal to talk to anything but loopback."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import pytest
import yaml

from proxyfleet.core.kubeconfig import KubeconfigError, api_client, current_context, loopback_address, read_access


def kubeconfig(tmp_path: Path, server: str = "https://127.0.0.5:6443", token: str | None = "t0ken") -> Path:
    user: dict[str, str] = {"token": token} if token is not None else {}
    document = {
        "apiVersion": "v1", "kind": "Config", "current-context": "lab",
        "clusters": [{"name": "other", "cluster": {"server": "https://127.0.0.9:1",
                                                  "certificate-authority-data": base64.b64encode(b"X").decode()}},
                     {"name": "c", "cluster": {"server": server,
                                               "certificate-authority-data": base64.b64encode(b"PEM").decode()}}],
        "contexts": [{"name": "lab", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": user}],
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def test_the_current_context_is_read(tmp_path: Path) -> None:
    access = read_access(kubeconfig(tmp_path))
    assert (access.server, access.ca_pem, access.token) == ("https://127.0.0.5:6443", b"PEM", "t0ken")
    assert (access.host, access.port) == ("127.0.0.5", 6443)
    assert api_client(kubeconfig(tmp_path)).configuration.host == "https://127.0.0.5:6443"


def test_a_context_without_a_token_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="lacks a server, CA data or token"):
        read_access(kubeconfig(tmp_path, token=None))


def test_an_unreadable_kubeconfig_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="cannot read kubeconfig"):
        read_access(tmp_path / "missing")
    (tmp_path / "bad").write_text("{ not: yaml: [")
    with pytest.raises(KubeconfigError, match="cannot read kubeconfig"):
        read_access(tmp_path / "bad")


def test_only_loopback_addresses_are_accepted() -> None:
    assert loopback_address("localhost") == "127.0.0.1"
    assert loopback_address("127.3.2.1") == "127.3.2.1"
    assert loopback_address("::1") == "::1"
    for host in ("10.0.0.1", "api.example.com", "8.8.8.8"):
        with pytest.raises(KubeconfigError, match="not a loopback address"):
            loopback_address(host)


def test_a_named_context_is_used_whatever_the_current_one(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path)
    document = yaml.safe_load(path.read_text())
    document["contexts"].append({"name": "prod", "context": {"cluster": "other", "user": "u"}})
    path.write_text(yaml.safe_dump(document))
    assert current_context(path) == "lab"
    document["current-context"] = "prod"  # `kubectl config use-context prod` while a run goes on
    path.write_text(yaml.safe_dump(document))
    assert api_client(path, "lab").configuration.host == "https://127.0.0.5:6443"
    assert api_client(path).configuration.host == "https://127.0.0.9:1"


@pytest.mark.parametrize(("text", "said"), [
    ("apiVersion: v1\nkind: Config\n", "has no current context"),
    ("current-context: gone\ncontexts: [{name: lab, context: {}}]\n", "'gone' is not among its contexts"),
    ("{{{", "not YAML"),
])
def test_a_kubeconfig_without_a_usable_current_context_is_one_error(tmp_path: Path, text: str, said: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)
    with pytest.raises(KubeconfigError, match=said):
        current_context(path)


def test_a_token_that_cannot_expire_is_not_applied_again_before_every_request(tmp_path: Path) -> None:
    static = api_client(kubeconfig(tmp_path))
    assert static.configuration.refresh_api_key_hook is None
    assert static.configuration.api_key == {"BearerToken": "Bearer t0ken"}  # still sent, as loaded
    path = kubeconfig(tmp_path)
    document = yaml.safe_load(path.read_text())
    credential = ('{"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential", '
                  '"status": {"token": "short-lived", "expirationTimestamp": "2099-01-01T00:00:00Z"}}')
    document["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1",
                                             "command": sys.executable, "args": ["-c", f"print({credential!r})"]}}
    path.write_text(yaml.safe_dump(document))
    renewed = api_client(path)  # an exec plugin's token expires: the client keeps renewing it
    assert renewed.configuration.refresh_api_key_hook is not None
    assert renewed.configuration.api_key == {"BearerToken": "Bearer short-lived"}
