"""The judge's look at a Linux node over real SSH, and its traffic probes through the lab's real
network and a real mitmdump: what each Linux trap leaves for the judge to see — a drop-in not
reloaded, upper-case variables only, an anchor not extracted, a service not restarted — on both
distributions; the bundle travels only when it changed."""

from __future__ import annotations

import base64
import dataclasses
import datetime as dt
import functools
import re
from pathlib import Path

import asyncssh
import certifi
import pytest

from proxyfleet.core.certificates import Certificate, certificates_in_bundle
from proxyfleet.core.contract import PROXY_VARIABLES
from proxyfleet.core.nodessh import NodeAddress, NodeConnection, NodeError
from proxyfleet.core.probetargets import ProbeTargetError
from proxyfleet.harness.conformance import linuxchecks
from proxyfleet.harness.conformance.linuxprobe import (
    DEBIAN,
    RHCOS,
    BundleCache,
    LinuxNodeState,
    UnknownDistribution,
    boot_environments,
    environment_files_named,
    fetch_command,
    observe,
    parse_probe,
    probe_script,
    pull_command,
    read_environment_files,
)
from proxyfleet.simulators.linux.node import LinuxNode
from proxyfleet.simulators.linux.nodemounts import host_cannot_mount
from proxyfleet.simulators.linux.noderoot import DEBIAN_NODE, RHCOS_NODE, Flavour
from proxyfleet.simulators.origins.catalog import INTERNET_HTTP_SITE, INTRANET_REGISTRY
from tests.simulators.linux.egresslab import LinuxEgressLab, lab_fixture, node_fixture
from tests.simulators.linux.sessions import run_on

CANNOT_MOUNT = host_cannot_mount()
pytestmark = [pytest.mark.skipif(CANNOT_MOUNT is not None, reason=f"{CANNOT_MOUNT}"),
              pytest.mark.asyncio(loop_scope="module")]
SYSTEM_CAS = Path(certifi.where()).read_bytes()
KEY = asyncssh.generate_private_key("ssh-ed25519")
run = functools.partial(run_on, key=KEY)


Lab = LinuxEgressLab


lab = lab_fixture("linux-probe")
node = node_fixture(KEY, SYSTEM_CAS, "127.10.11.")


async def look(node: LinuxNode, cache: BundleCache, known: str = "") -> LinuxNodeState:
    async with NodeConnection(NodeAddress(node.config.address, node.port, "core"), KEY,
                              node.host_key_openssh) as connection:
        return await observe(connection, cache, known)


def drop_in(flavour: Flavour, unit: str, body: str) -> str:
    directory = f"/etc/systemd/system/{unit}.d"
    return f"mkdir -p {directory} && cat > {directory}/10-proxy.conf <<'EOF'\n[Service]\n{body}\nEOF\n"


@pytest.mark.parametrize("node", [RHCOS_NODE, DEBIAN_NODE], indirect=True, ids=["rhcos", "debian"])
async def test_a_node_out_of_the_box_and_after_a_proxy_is_applied_the_way_it_should_be(lab: Lab,
                                                                                        node: LinuxNode) -> None:
    cache = BundleCache()
    layout = RHCOS if node.config.flavour is RHCOS_NODE else DEBIAN
    before = await look(node, cache)
    assert (before.layout, before.boot_id) == (layout, node.boots[-1].boot_id)
    assert set(before.services) == set(layout.services) and all(s.running for s in before.services.values())
    assert all(not s.environment and not s.needs_reload for s in before.services.values())
    public = {c.thumbprint for c in certificates_in_bundle(SYSTEM_CAS)}
    assert before.trusted == public
    assert not any(f.endswith("10-proxy.conf") for f in before.files)

    mitm = Certificate.from_pem(lab.proxy.mitm_ca_pem)
    anchor = f"{layout.anchors}/proxy-ca.crt"
    extract = "update-ca-trust" if layout is RHCOS else "update-ca-certificates >/dev/null"
    script = "".join(drop_in(node.config.flavour, unit, f'Environment="HTTPS_PROXY={lab.proxy_url}" '
                                                        f'"https_proxy={lab.proxy_url}" "NO_PROXY=.cluster.local"')
                     for unit in layout.services)
    stamp = dt.datetime.now(dt.UTC)
    result = await run(node, script + f"cat > {anchor} <<'EOF'\n{lab.proxy.mitm_ca_pem.decode()}EOF\n{extract} && "
                       f"systemctl daemon-reload && systemctl restart {' '.join(layout.services)}")
    assert result.exit_status == 0, result.stderr
    after = await look(node, cache, before.bundle_digest)
    for unit in layout.services:
        service = after.services[unit]
        assert service.environment == {"HTTPS_PROXY": lab.proxy_url, "https_proxy": lab.proxy_url,
                                       "NO_PROXY": ".cluster.local"}
        assert service.started is not None and service.started >= stamp.replace(microsecond=0) - dt.timedelta(seconds=1)
        assert service.started > before.services[unit].started  # type: ignore[operator]
    assert after.trusted == before.trusted | {mitm.thumbprint}
    assert anchor in after.files and f"/etc/systemd/system/{layout.runtime}.d/10-proxy.conf" in after.files


async def test_a_drop_in_not_reloaded_and_a_service_not_restarted_show_as_such(lab: Lab, node: LinuxNode) -> None:
    cache = BundleCache()
    result = await run(node, drop_in(RHCOS_NODE, "kubelet.service", f'Environment="HTTP_PROXY={lab.proxy_url}"')
                       + "systemctl restart kubelet.service")
    assert result.exit_status == 0
    seen = await look(node, cache)
    kubelet = seen.services["kubelet.service"]
    assert kubelet.needs_reload and kubelet.environment == {}  # restarted with what was loaded
    result = await run(node, "systemctl daemon-reload")
    seen = await look(node, cache)
    assert not seen.services["kubelet.service"].needs_reload
    assert seen.services["kubelet.service"].environment == {}  # reloaded but not restarted: the process is old
    assert seen.started()["crio.service"] is not None


async def test_an_anchor_not_extracted_is_not_trusted(lab: Lab, node: LinuxNode) -> None:
    cache = BundleCache()
    before = await look(node, cache)
    await run(node, f"cat > {RHCOS.anchors}/proxy-ca.crt <<'EOF'\n{lab.proxy.mitm_ca_pem.decode()}EOF\n")
    after = await look(node, cache, before.bundle_digest)
    assert after.trusted == before.trusted and after.bundle_digest == before.bundle_digest
    assert f"{RHCOS.anchors}/proxy-ca.crt" in after.files


async def test_the_bundle_travels_only_when_it_changed(lab: Lab, node: LinuxNode) -> None:
    cache = BundleCache()
    first = await look(node, cache)
    async with NodeConnection(NodeAddress(node.config.address, node.port, "core"), KEY,
                              node.host_key_openssh) as connection:
        unchanged = await connection.run("sudo -n sh", input=probe_script(first.bundle_digest))
    assert "\nbundle " not in str(unchanged.stdout) and f"digest {first.bundle_digest}" in str(unchanged.stdout)
    assert parse_probe(str(unchanged.stdout), cache).trusted == first.trusted
    with pytest.raises(NodeError, match="left out a bundle"):
        parse_probe(str(unchanged.stdout), BundleCache())  # a judge that does not hold it says so


async def test_fetch_uses_the_kubelets_proxy_variables_with_curls_rules(lab: Lab, node: LinuxNode) -> None:
    url = f"http://{INTERNET_HTTP_SITE}/"
    upper = drop_in(RHCOS_NODE, "kubelet.service", f'Environment="HTTP_PROXY={lab.proxy_url}"')
    restarted = await run(node, upper + "systemctl daemon-reload && systemctl restart kubelet")
    assert restarted.exit_status == 0, restarted.stderr
    assert node.model.systemd.running["kubelet.service"].environment["HTTP_PROXY"] == lab.proxy_url
    before = len(lab.proxy.flows())
    ignored = await run(node, fetch_command(url))
    # curl ignores HTTP_PROXY and goes direct, where the firewall resets it (curl's exit 56)
    assert ignored.exit_status == 56 and "Connection reset by peer" in ignored.stderr, ignored.stderr
    assert len(lab.proxy.flows()) == before
    lower = drop_in(RHCOS_NODE, "kubelet.service", f'Environment="HTTP_PROXY={lab.proxy_url}" '
                                                   f'"http_proxy={lab.proxy_url}"')
    restarted = await run(node, lower + "systemctl daemon-reload && systemctl restart kubelet")
    assert restarted.exit_status == 0, restarted.stderr
    fetched = await run(node, fetch_command(url))
    assert fetched.exit_status == 0, fetched.stderr
    assert any(INTERNET_HTTP_SITE in str(f.get("host", "")) for f in lab.proxy.flows()[before:])
    stopped = await run(node, "systemctl stop kubelet && " + fetch_command(url))
    assert (stopped.exit_status, stopped.stderr) == (2, "the kubelet is not running: no environment to fetch with\n")


async def test_pull_goes_through_the_runtime_with_the_cas_it_started_with(lab: Lab, node: LinuxNode) -> None:
    image = f"{INTRANET_REGISTRY}/corp/agent:1.0"
    refused = await run(node, pull_command(image))
    assert refused.exit_status == 1 and "x509: certificate signed by unknown authority" in refused.stderr
    anchor = f"cat > {RHCOS.anchors}/lab.crt <<'EOF'\n{lab.public_ca.cert_pem.bytes().decode()}EOF\n"
    still = await run(node, anchor + "update-ca-trust && " + pull_command(image))
    assert still.exit_status == 1  # CRI-O read its CAs when it started
    pulled = await run(node, "systemctl restart crio && " + pull_command(image))
    assert pulled.exit_status == 0, pulled.stderr
    assert image in node.model.images


async def test_targets_that_cannot_be_carried_are_refused_before_anything_is_sent() -> None:
    with pytest.raises(ProbeTargetError):
        fetch_command("http://x/'; reboot #")
    with pytest.raises(ProbeTargetError):
        pull_command("Not A Reference")
    assert fetch_command("http://a.example/x?y=1").endswith("'http://a.example/x?y=1'")


async def test_an_unknown_distribution_is_refused_by_name() -> None:
    with pytest.raises(UnknownDistribution, match="'arch', which the judge has no layout for"):
        parse_probe("os arch\n", BundleCache())
    with pytest.raises(NodeError, match="not a line of the Linux probe"):
        parse_probe("os rhcos\nhello\n", BundleCache())


async def test_what_the_probe_cannot_read_or_a_systemd_that_answers_otherwise_is_an_error_naming_it() -> None:
    with pytest.raises(NodeError, match=r"systemctl show crio\.service answered without LoadState, ExecMainStartTimestamp"):
        parse_probe("os rhcos\nboot b\nunit crio.service ActiveState=active|MainPID=7|NeedDaemonReload=no|\n",
                    BundleCache())
    with pytest.raises(NodeError, match="needs 251 or later"):  # systemd 247-250 ignore --timestamp= in show
        parse_probe("os rhcos\nboot b\nunit crio.service LoadState=loaded|ActiveState=active|MainPID=7|"
                    "NeedDaemonReload=no|ExecMainStartTimestamp=Wed 2026-11-18 11:06:40 CET|\n", BundleCache())
    with pytest.raises(NodeError, match=r"cannot read /proc/7/environ of kubelet\.service: the probe must run as root"):
        parse_probe("os rhcos\nboot b\nenviron-unreadable kubelet.service 7\n", BundleCache())


async def test_a_missing_unit_a_value_with_a_newline_and_a_linked_file_are_seen_as_they_are(lab: Lab,
                                                                                            node: LinuxNode) -> None:
    cache = BundleCache()
    setup = await run(node, "rm /usr/lib/systemd/system/crio.service && systemctl daemon-reload && "
                            "ln -s /etc/hostname /etc/systemd/system/linked.conf && " +
                            drop_in(RHCOS_NODE, "kubelet.service", 'Environment="NO_PROXY=a\\nfile /etc/forged"') +
                            "systemctl daemon-reload && systemctl restart kubelet")
    assert setup.exit_status == 0, setup.stderr
    seen = await look(node, cache)
    assert not seen.services["crio.service"].found
    assert seen.services["kubelet.service"].environment == {"NO_PROXY": "a\nfile /etc/forged"}
    assert "/etc/systemd/system/linked.conf" in seen.files and "/etc/forged" not in seen.files
    assert "crio.service not found (no unit file)" in linuxchecks.service_environment(seen, {}).observed


async def test_the_units_files_read_over_ssh_give_what_the_next_boot_starts_them_with(lab: Lab,
                                                                                    node: LinuxNode) -> None:
    # What an existing cluster's judge reads instead of lab evidence: the units' files as systemd
    # loaded them and the environment files they name, composed with systemd's rules — it must
    # agree with the node's own systemd (the lab's evidence), and leave out set-environment's.
    units = RHCOS.services
    script = ("mkdir -p /etc/mco && printf '%s\\n' 'HTTP_PROXY=http://svc:p%40ss@proxy:3128' "
              "'NO_PROXY=\"a b\"' > /etc/mco/proxy.env\n"
              + "".join(drop_in(RHCOS_NODE, u, 'EnvironmentFile=/etc/mco/proxy.env\nEnvironment="http_proxy=x%%y"')
                        for u in units)
              + "mkdir -p /etc/systemd/system/kubelet.service.d && printf '[Service]\\nEnvironmentFile=\\n"
                "EnvironmentFile=-/etc/mco/absent.env\\n' > /etc/systemd/system/kubelet.service.d/20-reset.conf\n"
              + "systemctl daemon-reload && systemctl set-environment HTTPS_PROXY=http://runtime-only:1\n")
    assert (await run(node, script)).exit_status == 0
    async with NodeConnection(NodeAddress(node.config.address, node.port, "core"), KEY,
                              node.host_key_openssh) as connection:
        first = await observe(connection, BundleCache(), unit_files=True)
        assert first.unit_files is not None
        assert [p for p, _ in first.unit_files["kubelet.service"]][1:] == [
            "/etc/systemd/system/kubelet.service.d/10-proxy.conf",
            "/etc/systemd/system/kubelet.service.d/20-reset.conf"]
        named = environment_files_named(first)
        # crio's own fragment names its sysconfig file (optional) as on RHCOS
        assert named == {"/etc/mco/proxy.env", "/etc/mco/absent.env", "/etc/sysconfig/crio"}
        assert not first.environment_files
        with pytest.raises(ValueError, match="did not read"):
            boot_environments(first)
        state = dataclasses.replace(first, environment_files=await read_environment_files(connection, sorted(named)))
        assert state.environment_files["/etc/mco/absent.env"] is None
        # a later look carries the files its units named last time: one round trip
        again = await observe(connection, BundleCache(), unit_files=True, environment_files=sorted(named))
    assert again.environment_files == state.environment_files
    found = boot_environments(state)
    systemd = node.model.systemd
    expected = {u: {k: v for k, v in (systemd.environment_at_boot(u) or {}).items() if k.upper() in PROXY_VARIABLES}
                for u in units}
    assert found == expected
    assert found["crio.service"] == {"HTTP_PROXY": "http://svc:p%40ss@proxy:3128", "NO_PROXY": "a b",
                                     "http_proxy": "x%y"}
    # the later drop-in emptied the list; the optional file that is not there adds nothing
    assert found["kubelet.service"] == {"http_proxy": "x%y"}


async def test_unit_files_are_read_only_with_the_nodes_identity_and_only_as_files() -> None:
    head = "os rhcos\nboot " + "1" * 32 + "\n"
    path = base64.b64encode(b"/etc/systemd/system/crio.service.d/x.conf").decode()
    with pytest.raises(NodeError, match="before the node's identity"):
        parse_probe(head + f"unitfile crio.service {path} \n", BundleCache())
    identity = "identity " + base64.b64encode(b"host=w\0id=rhcos").decode() + "\n"
    with pytest.raises(NodeError, match=re.escape("names '/etc/systemd/system/crio.service.d/x.conf' among "
                                                  "crio.service's files, and it is not a file there")):
        parse_probe(head + identity + f"unitfile-missing crio.service {path}\n", BundleCache())
