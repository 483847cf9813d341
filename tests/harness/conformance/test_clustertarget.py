"""An existing cluster's run settings: the destinations each traffic check uses (and which are the
network's to allow) and those a node's probe cannot carry, a JSON round trip the scenario run reads,
strict host keys from a known_hosts file, the baselines and the host keys pinned on first contact a
run keeps for its later scenarios — and credentials never in the plan."""

from __future__ import annotations

import stat
from pathlib import Path

import asyncssh
import pytest

from proxyfleet.harness.conformance.clustertarget import ClusterTarget, ClusterTargetError, parse_instance


def _target(tmp_path: Path, **more: object) -> ClusterTarget:
    settings: dict[str, object] = {"kubeconfig": tmp_path / "kubeconfig", "ssh_key_path": tmp_path / "id",
                                   "proxy_url": "http://svc:S3cr3t@proxy.corp.example:3128"}
    settings.update(more)
    return ClusterTarget(**settings)  # type: ignore[arg-type]


def test_each_named_destination_feeds_its_check(tmp_path: Path) -> None:
    target = _target(tmp_path, internet_image="quay.io/org/img:1", intranet_image="registry.corp.example:5000/a:2",
                     http_url="http://downloads.example.com/file.txt")
    found = {d.check: d for d in target.destinations()}
    assert found["pull-internet"].host == "quay.io" and found["pull-internet"].internet
    assert found["pull-internet"].route_url == "https://quay.io/v2/" and found["pull-internet"].client == "go"
    assert found["pull-intranet"].host == "registry.corp.example:5000" and not found["pull-intranet"].internet
    assert (found["pull-intranet"].name, found["pull-internet"].name) == ("registry.corp.example", "quay.io")
    assert found["fetch-http"].host == "downloads.example.com" and found["fetch-http"].client == "curl"
    assert found["fetch-http"].route_url == "http://downloads.example.com/file.txt"
    assert _target(tmp_path).destinations() == []


def test_the_settings_survive_json_and_the_plan_shows_no_credential(tmp_path: Path) -> None:
    target = _target(tmp_path, proxy_ca_pems=[b"-----BEGIN CERTIFICATE-----\n"], instances={"10.0.0.5": "admin"},
                     linux_instances={"10.0.6.10": "core"},
                     second_proxy_url="http://svc:S3cr3t@proxy2.corp.example:8080", baseline_file=tmp_path / "b.json",
                     host_keys_file=tmp_path / "host-keys.json", proxy_access_log=tmp_path / "access.log",
                     proxy_log_format="combined")
    assert ClusterTarget.from_json(target.to_json()) == target
    assert ClusterTarget.from_json({**target.to_json(), "proxy_log_format": None}).proxy_log_format == "auto"
    plan = "\n".join(target.describe())
    assert "S3cr3t" not in plan and "svc" not in plan
    assert "admin@10.0.0.5" in plan and "1 CA certificate(s)" in plan
    assert "linux nodes:  core@10.0.6.10 (configured by the platform" in plan
    assert "linux nodes:  none (name them with --linux-instance" in "\n".join(_target(tmp_path).describe())
    with pytest.raises(ClusterTargetError, match="not a proxyfleet-cluster-run/v1 file"):
        ClusterTarget.from_json({"format": "something else"})


def test_an_instance_is_address_equals_user() -> None:
    assert parse_instance(" 10.0.0.5 = Administrator ") == ("10.0.0.5", "Administrator")
    for bad in ("10.0.0.5", "=admin", "10.0.0.5="):
        with pytest.raises(ClusterTargetError, match="expected ADDRESS=USER"):
            parse_instance(bad)
    with pytest.raises(ClusterTargetError, match=r"--linux-instance '10\.0\.6\.10': expected ADDRESS=USER .*=core"):
        parse_instance("10.0.6.10", "--linux-instance", "10.0.6.10=core")


def test_known_hosts_pin_the_listed_key_per_address_and_port(tmp_path: Path) -> None:
    first, other = (asyncssh.generate_private_key("ssh-ed25519") for _ in range(2))
    known = tmp_path / "known_hosts"
    known.write_text(f"[10.0.0.5]:2222 {first.export_public_key().decode()}"
                     f"10.0.0.6 {other.export_public_key().decode()}")
    target = _target(tmp_path, known_hosts=known, ssh_port=2222)
    pins = target.pinned_host_keys(["10.0.0.5", "10.0.0.6", "10.0.0.7"])
    assert pins["10.0.0.5"] == first.export_public_key("openssh").decode().strip()
    assert "10.0.0.7" not in pins  # not listed: the probe refuses it (strict)
    known.write_text("10.0.0.5\n")  # a host without a key
    with pytest.raises(ClusterTargetError, match="--ssh-known-hosts"):
        target.pinned_host_keys(["10.0.0.5"])
    assert _target(tmp_path).pinned_host_keys(["10.0.0.5"]) == {}  # no file: pinned on first contact


def test_a_bad_key_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "id").write_text("not a key\n")
    with pytest.raises(ClusterTargetError, match=r"--ssh-key .*cannot read a private key"):
        _target(tmp_path).ssh_key()


def test_baselines_are_kept_once_per_node_in_an_owner_only_file(tmp_path: Path) -> None:
    target = _target(tmp_path, baseline_file=tmp_path / "baselines.json")
    assert target.read_baselines() == {}
    target.save_baselines({"10.0.0.5": (frozenset({"AA"}), frozenset({"C:\\k\\x"}))})
    target.save_baselines({"10.0.0.5": (frozenset({"BB"}), frozenset()), "10.0.0.6": (frozenset(), frozenset())})
    assert target.read_baselines() == {"10.0.0.5": (frozenset({"AA"}), frozenset({"C:\\k\\x"})),
                                       "10.0.0.6": (frozenset(), frozenset())}
    assert stat.S_IMODE((tmp_path / "baselines.json").stat().st_mode) == 0o600


@pytest.mark.parametrize(("given", "start"), [
    ({"http_url": "http://site.example/?a=1&echo x>C:\\k\\f.txt"},
     "--http-url 'http://site.example/?a=1&echo x>C:\\\\k\\\\f.txt': ' ' (position 30) is not a URL character"),
    ({"http_url": "http://site.example/\x1b[31m"}, "--http-url 'http://site.example/\\x1b[31m': '\\x1b' (position 21)"),
    ({"http_url": "http://user:secret@site.example/"}, "--http-url: a URL with credentials"),
    ({"internet_image": "quay.io/a:1\n"}, "--internet-image 'quay.io/a:1\\n': parse reference"),
    ({"intranet_image": "-x.example/a:1"}, "--intranet-image '-x.example/a:1': parse reference"),
])
def test_a_destination_a_probe_cannot_carry_is_refused_naming_its_option(tmp_path: Path, given: dict[str, str],
                                                                       start: str) -> None:
    with pytest.raises(ClusterTargetError) as refused:
        _target(tmp_path, **given).check_destinations()
    assert str(refused.value).startswith(start), str(refused.value)
    assert "\n" not in str(refused.value) and "secret" not in str(refused.value)
    _target(tmp_path, http_url="http://site.example/?a=1&b='2'", internet_image="quay.io/a:1").check_destinations()


def test_host_keys_pinned_on_first_contact_are_kept_for_the_run_owner_only(tmp_path: Path) -> None:
    target = _target(tmp_path, host_keys_file=tmp_path / "host-keys.json")
    assert target.host_key_pins(["10.0.0.5"]) == {}
    target.save_host_key("10.0.0.5", "ssh-ed25519 AAAA-first")
    target.save_host_key("10.0.0.5", "ssh-ed25519 AAAA-other")  # a node's first pin is kept
    target.save_host_key("10.0.0.6", "ssh-ed25519 BBBB")
    again = ClusterTarget.from_json(target.to_json())  # the next scenario's view of the run
    assert again.host_key_pins(["10.0.0.5"]) == {"10.0.0.5": "ssh-ed25519 AAAA-first", "10.0.0.6": "ssh-ed25519 BBBB"}
    assert stat.S_IMODE((tmp_path / "host-keys.json").stat().st_mode) == 0o600
    # --ssh-known-hosts stays strict: only its keys, and nothing is pinned beside them
    known = tmp_path / "known_hosts"
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key("openssh").decode().strip()
    known.write_text(f"10.0.0.7 {key}\n")
    strict = _target(tmp_path, host_keys_file=tmp_path / "host-keys.json", known_hosts=known)
    assert strict.host_key_pins(["10.0.0.5", "10.0.0.7"]) == {"10.0.0.7": key}
    strict.save_host_key("10.0.0.8", "ssh-ed25519 CCCC")
    assert "10.0.0.8" not in target.host_key_pins([])
