"""A CAPI machine's bootstrap data: cluster-apps-operator's Secret, the kubeadm files as cloud-init,
and the judge catching each broken platform shape on CAPI machines that boot with it."""

import asyncio
import base64
from pathlib import Path

import pytest
import yaml
from kubernetes import client as k8s

from proxyfleet.harness.conformance import Conformance
from proxyfleet.harness.lab import Lab, LabSettings, capibootstrap
from proxyfleet.harness.lab.assembly import LabError
from proxyfleet.harness.lab.clustername import read_cluster_name
from proxyfleet.simulators.linux.cloudinit import parse_user_data

PROXY = "http://user:p%40ss@proxy.corp.example:3128"


def test_the_secret_is_cluster_apps_operator_s_template_line_for_line() -> None:
    text = capibootstrap.systemd_proxy_drop_in(PROXY, PROXY, ".cluster.local,10.0.0.0/16")
    assert text.splitlines() == [
        "[Service]",
        f'Environment="HTTP_PROXY={PROXY}"', f'Environment="http_proxy={PROXY}"',
        f'Environment="HTTPS_PROXY={PROXY}"', f'Environment="https_proxy={PROXY}"',
        'Environment="NO_PROXY=.cluster.local,10.0.0.0/16"', 'Environment="no_proxy=.cluster.local,10.0.0.0/16"']
    assert capibootstrap.secret_name("lab-x7k2p") == "lab-x7k2p-systemd-proxy"


@pytest.mark.parametrize("value", ['http://a"b:1', "http://a\\b:1", "http://a\nb:1"])
def test_a_value_the_template_cannot_carry_is_refused(value: str) -> None:
    with pytest.raises(capibootstrap.BootstrapError, match="does not escape"):
        capibootstrap.systemd_proxy_drop_in(value, "", "")


def test_each_style_is_cloud_init_user_data_the_node_understands() -> None:
    drop_in = capibootstrap.systemd_proxy_drop_in(PROXY, PROXY, "")
    ca = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    for name, style in capibootstrap.STYLES.items():
        config = parse_user_data(capibootstrap.user_data(style, drop_in, ca))
        written = {f.path: f for f in config.write_files}
        assert all(written[p].content == drop_in.encode() and written[p].mode == 0o644 for p in style.drop_ins), name
        assert written[capibootstrap.CA_PATH].content == ca.encode()
        assert config.runcmd == style.commands
    correct = capibootstrap.STYLES["capi"]
    assert set(correct.drop_ins) == {capibootstrap.CONTAINERD_DROP_IN, capibootstrap.KUBELET_DROP_IN}
    assert correct.commands[0] == "update-ca-certificates" and "systemctl daemon-reload" in correct.commands
    # each broken one differs from the correct one in exactly its own way
    assert "systemctl daemon-reload" not in capibootstrap.STYLES["capi-no-daemon-reload"].commands
    assert capibootstrap.STYLES["capi-containerd-only"].drop_ins == (capibootstrap.CONTAINERD_DROP_IN,)
    assert "update-ca-certificates" not in capibootstrap.STYLES["capi-no-ca-update"].commands
    assert set(capibootstrap.BROKEN) == set(capibootstrap.STYLES) - {"capi"}


def test_an_unknown_style_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(capibootstrap.BootstrapError, match=r"unknown CAPI bootstrap 'ignition'.*capi-no-ca-update"):
        capibootstrap.style_named("ignition")


def test_the_user_data_is_yaml_a_person_can_read() -> None:
    text = capibootstrap.user_data(capibootstrap.STYLES["capi"], "[Service]\n", "")
    document = yaml.safe_load(text)
    assert text.startswith("#cloud-config\n") and list(document) == ["write_files", "runcmd"]
    assert capibootstrap.CA_PATH not in {f["path"] for f in document["write_files"]}  # no CA, no file


async def test_a_bootstrap_without_the_install_s_proxy_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LabError, match=r"CAPI bootstrap data: .*set install_proxy"):
        async with Lab(LabSettings(nodes=0, linux_nodes=1, linux_bootstrap="capi", workloads=False,
                                   reconciler=None, state_dir=tmp_path / "lab")):
            pass


# What the judge must name for each broken platform shape, on every CAPI machine: the
# configuration the services run with, what systemd loaded, what the node trusts, and the traffic.
CATCHES = {
    "capi-no-daemon-reload": {"units-loaded", "service-environment"},
    "capi-containerd-only": {"service-environment"},
    "capi-no-ca-update": {"certificates", "pull-internet"},
}


@pytest.mark.parametrize("style", ["capi", *CATCHES])
async def test_capi_machines_are_judged_by_install_time(tmp_path: Path, style: str) -> None:
    """The correct bootstrap passes every check on every machine (nothing restarted or rebooted
    during the step: they were configured at boot); each broken one fails its named checks on
    every machine and only on the machines."""
    async with Lab(LabSettings(nodes=1, linux_nodes=2, linux_bootstrap=style, install_proxy=True,
                               state_dir=tmp_path / "lab", reconciler="correct")) as lab:
        judge = Conformance(lab)
        await judge.start()
        try:
            capi = {n.address for n in judge.linux_nodes}
            # the Secret cluster-apps-operator would have written, from the cluster's Proxy status
            core = k8s.CoreV1Api(judge.api)
            cluster = (await read_cluster_name(judge.api)).name
            secret = await asyncio.to_thread(core.read_namespaced_secret, capibootstrap.secret_name(cluster),
                                             capibootstrap.SECRET_NAMESPACE)
            drop_in = base64.b64decode(secret.data[capibootstrap.SECRET_KEY]).decode()
            assert f'Environment="http_proxy={lab.proxy_url}"' in drop_in.splitlines()
            await judge.add_bootstrapped(judge.linux_nodes)
            results = await judge.step("instances join beside CAPI machines",
                                       lambda: judge.add_instances(judge.nodes))
        finally:
            await judge.close()
    judged = {r.node for r in results}
    assert capi <= judged  # the machines were judged, as members
    failed = {(r.node, r.check) for r in results if r.status == "failed"}
    assert all(node in capi for node, _ in failed), failed  # the Windows node joined correctly
    if style == "capi":
        assert not failed
        passed = {(r.node, r.check) for r in results if r.status == "passed"}
        for node in capi:
            assert {(node, c) for c in ("service-environment", "units-loaded", "certificates", "services-restarted",
                                        "reboots", "pull-internet", "fetch-http")} <= passed
    else:
        for node in capi:
            assert CATCHES[style] <= {check for n, check in failed if n == node}, (style, failed)


# A percent-encoded password: cluster-apps-operator's template escapes nothing, so systemd reads
# "%4" as a specifier it does not know and ignores the assignment — the real platform's bug, caught.
@pytest.mark.parametrize(("auth", "caught"), [("build:s3cret", set()),
                                              ("build:s3cr%40t", {"service-environment", "unit-environment",
                                                                  "pull-internet", "fetch-http", "firewall",
                                                                  "converged"})])
async def test_a_proxy_with_credentials_reaches_the_machines_and_the_secret_is_no_leak(
        tmp_path: Path, auth: str, caught: set[str]) -> None:
    """The Secret must hold the proxy's credentials (it is cluster-apps-operator's copy, the
    machines' only source): the credentials check does not count it as a leak, and the machines
    reach the internet through the proxy with them — unless the password holds a ``%``."""
    async with Lab(LabSettings(nodes=1, linux_nodes=1, linux_bootstrap="capi", install_proxy=True,
                               proxy_auth=auth, state_dir=tmp_path / "lab",
                               reconciler="correct")) as lab:
        judge = Conformance(lab)
        await judge.start()
        try:
            await judge.add_bootstrapped(judge.linux_nodes)
            results = await judge.step("instances join beside CAPI machines",
                                       lambda: judge.add_instances(judge.nodes))
        finally:
            await judge.close()
    failed = {(r.node, r.check) for r in results if r.status == "failed"}
    machine = judge.linux_nodes[0].address
    assert failed == {(machine, check) for check in caught}, failed  # the machine alone, each way it shows
    assert "credentials" in {r.check for r in results if r.status == "passed"}
