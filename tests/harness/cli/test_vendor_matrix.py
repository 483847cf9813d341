"""The vendor matrix: real proxies from Debian packages as the lab's corporate proxy, each run with
its ``examples/<proxy>/`` directory and command line as the examples' headers give them — Apache
httpd (mod_proxy_connect, demanding Basic authentication), Apache Traffic Server and tinyproxy
(plain, and demanding Basic authentication), as processes, and Apache httpd from an image built
from Debian's apache2. None of them writes
Squid's native log exactly (tinyproxy writes no access log at all): the verdict rests on the
nodes' own records, the origins' logs and the egress firewall, so each must pass as Squid does,
and a broken reconciler must still fail, naming its check."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from proxyfleet.harness.lab.vendorexamples import installed_program
from proxyfleet.simulators.origins.catalog import real_ports_allowed

EXAMPLES = Path(__file__).parents[3] / "examples"
PASSWORD = "s3cret"


@dataclass(frozen=True)
class Vendor:
    """One proxy as its example runs it."""

    name: str
    directory: str  # its example's, under examples/
    package: str  # the Debian package that brings it
    program: str
    command: str  # --proxy-command, "{program}" standing for the program
    user: str  # its package's system user: --proxy-user, as root
    etc_hosts: bool  # resolves names only through /etc/hosts: --proxy-etc-hosts
    log: str  # its log (kept in each lab's proxy/ directory) naming what it forwarded
    # Basic authentication of the nodes' user:password, from a file given as --proxy-config:
    # "passwd" (htpasswd) or "basicauth.conf" (tinyproxy's BasicAuth line); None: none asked
    auth_file: str | None = None

    def program_path(self) -> str | None:
        return installed_program(self.program)


VENDORS = {vendor.name: vendor for vendor in [
    Vendor("apache", "apache", "apache2", "apache2",
           "{program} -DFOREGROUND -d {config_dir} -f {config_dir}/httpd-basic-auth.conf", "www-data",
           etc_hosts=True, log="access.log", auth_file="passwd"),
    Vendor("trafficserver", "trafficserver", "trafficserver", "traffic_server",
           "{program} --run-root={config_dir}/runroot.yaml", "trafficserver", etc_hosts=False, log="access.log"),
    Vendor("tinyproxy", "tinyproxy", "tinyproxy", "tinyproxy", "{program} -d -c {config_dir}/tinyproxy.conf",
           "tinyproxy", etc_hosts=True, log="tinyproxy.log"),
    # tinyproxy has no include directive: the command appends the BasicAuth line (tinyproxy.conf's header)
    Vendor("tinyproxy-basic-auth", "tinyproxy", "tinyproxy", "tinyproxy",
           "sh -c 'cat {config_dir}/tinyproxy.conf {config_dir}/basicauth.conf > {config_dir}/with-auth.conf "
           "&& exec {program} -d -c {config_dir}/with-auth.conf'", "tinyproxy", etc_hosts=True, log="tinyproxy.log",
           auth_file="basicauth.conf"),
]}


def missing(vendor: Vendor, container: bool = False) -> str | None:
    """Why ``vendor`` cannot run here (None: it can)."""
    if not real_ports_allowed():
        return "origins on ports 80/443 need root, or net.ipv4.ip_unprivileged_port_start=0"
    if not container and vendor.program_path() is None:
        return f"needs {vendor.program} (apt-get install {vendor.package})"
    if vendor.etc_hosts and not container and os.geteuid() != 0:
        return f"{vendor.program} resolves names only through /etc/hosts: --proxy-etc-hosts needs root"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(vendor.user)
        except KeyError:
            return f"needs the user {vendor.user} (Debian's {vendor.package} package creates it)"
    return None


def needs(name: str) -> Vendor:
    """The vendor, or a skip saying why it cannot run here."""
    vendor = VENDORS[name]
    why = missing(vendor)
    if why is not None:
        pytest.skip(why)
    return vendor


def vendor_options(tmp_path: Path, vendor: Vendor, password: str = PASSWORD, image: str | None = None) -> list[str]:
    """``proxyfleet conformance`` options running ``vendor`` with its example configuration, as a
    process of this machine or in a container of ``image`` (which gets the lab's names as extra
    hosts: no --proxy-etc-hosts)."""
    program = vendor.program if image else vendor.program_path()
    options = ["--proxy-command", vendor.command.replace("{program}", str(program)),
               "--proxy-config", str(EXAMPLES / vendor.directory)]
    if os.geteuid() == 0:
        options += ["--proxy-user", vendor.user]
    if vendor.etc_hosts and image is None:
        options.append("--proxy-etc-hosts")
    if vendor.log != "access.log":  # read for the reports (never for a verdict), in its own format
        options += ["--proxy-access-log", f"{{config_dir}}/{vendor.log}"]
    if image is not None:
        options += ["--proxy-image", image]
    if vendor.auth_file == "passwd":
        hashed = subprocess.run(["openssl", "passwd", "-apr1", "-stdin"], input=PASSWORD, capture_output=True,
                                text=True, check=True).stdout.strip()  # the password on stdin, not argv
        (tmp_path / "passwd").write_text(f"vendor:{hashed}\n")
    elif vendor.auth_file == "basicauth.conf":
        (tmp_path / "basicauth.conf").write_text(f"BasicAuth vendor {PASSWORD}\n")
    if vendor.auth_file is not None:
        (tmp_path / "auth").write_text(f"vendor:{password}\n")
        options += ["--proxy-config", str(tmp_path / vendor.auth_file), "--proxy-auth-file", str(tmp_path / "auth")]
    return options


# What a proxy that passes must carry: the runtime add, a change of URL (to credentials that are
# code), a CA rotation (with the lab's proxy: the proxy switches CA; with a vendor's: the company CA)
THREE_SCENARIOS = ("--scenario", "test_proxy_added_at_runtime", "--scenario", "test_proxy_url_changed_at_runtime",
                   "--scenario", "test_proxy_ca_rotated_to_a_new_ca")


def conformance(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    report = tmp_path / "r.json"
    result = subprocess.run([sys.executable, "-m", "proxyfleet.harness", "conformance", "--json", str(report), *args],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert report.exists(), result.stderr[-3000:]
    return result, json.loads(report.read_text())


def checks(report: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for s in report["scenarios"] for c in s["checks"]]


def errors(report: dict[str, Any]) -> str:
    """What broke scenarios outside their checks (a proxy that did not start: why, in full)."""
    return "".join(f"\n{s['name']}: {s['error'][-3000:]}" for s in report["scenarios"] if s.get("error"))


def _passes(tmp_path: Path, vendor: Vendor, image: str | None = None) -> None:
    labs = tmp_path / "labs"
    result, report = conformance(tmp_path, "--nodes", "2", *THREE_SCENARIOS,
                                 "--keep", str(labs), *vendor_options(tmp_path, vendor, image=image))
    assert result.returncode == 0, result.stderr[-4000:] + errors(report)
    assert report["summary"] == {"passed": 3, "failed": 0, "skipped": 0, "inconclusive": 0}
    assert all(c["status"] == "passed" for c in checks(report)), [c for c in checks(report) if c["status"] != "passed"]
    assert "through the proxy, tunnelled, origin certificate" in {c["observed"] for c in checks(report)
                                                                  if c["check"] == "pull-internet"}
    # its log was read, whatever its format: the reports summarise what it carried (Traffic Server
    # writes its log every second, so a scenario's summary may be read before the last lines are
    # there: the kept files below are read once it has stopped)
    if vendor.program != "traffic_server":
        assert all(any("quay.io" in key for key in s["flows"]) for s in report["scenarios"]), \
            [sorted(s["flows"]) for s in report["scenarios"]]
    kept = sorted(labs.iterdir())
    assert len(kept) == 3
    for lab in kept:
        # The proxy's own log shows the nodes' pull and fetch (enrichment, not the verdict) ...
        log = (lab / "proxy" / vendor.log).read_text()
        assert "CONNECT quay.io:443" in log and "GET http://ctldl.windowsupdate.com/" in log, lab.name
        # ... and it left from the egress address: the firewall refused only nodes (before the
        # Proxy was set), never the proxy.
        nodes = {n["address"] for n in json.loads((lab / "fleet" / "fleet.json").read_text())["nodes"]}
        violations = lab / "firewall-violations.jsonl"
        sources = {json.loads(line)["source"] for line in violations.read_text().splitlines()} \
            if violations.exists() else set()
        assert sources <= nodes, sources - nodes
        # Credentials: never in the proxy's own logs or output (a user name may be)
        assert not [p.name for p in (lab / "proxy").iterdir() if PASSWORD in p.read_text(errors="replace")]
    assert PASSWORD not in result.stderr + json.dumps(report)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(VENDORS))
def test_a_vendor_proxy_as_a_process_passes_runtime_add_and_change(tmp_path: Path, name: str) -> None:
    _passes(tmp_path, needs(name))


# Broken reconcilers whose catch no proxy can change (the node's certificate store, its registry
# values): each still fails, naming the check, through every proxy.
BROKEN = [("no-cert-import", "certificates"), ("semicolon-noproxy", "registry-env")]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["apache", "tinyproxy", "trafficserver"])
@pytest.mark.parametrize(("variant", "check"), BROKEN)
def test_a_broken_reconciler_is_caught_through_a_vendor_proxy(tmp_path: Path, name: str, variant: str,
                                                              check: str) -> None:
    result, report = conformance(tmp_path, "--nodes", "2", "--workflow", "runtime-add", "--variant", variant,
                                 "--converge-timeout", "5", *vendor_options(tmp_path, needs(name)))
    assert result.returncode == 1, result.stderr[-3000:] + errors(report)
    failed = {c["check"] for c in checks(report) if c["status"] == "failed"}
    assert check in failed, failed
    assert check in result.stderr  # the summary table names it too


@pytest.fixture(scope="module")
def apache_image() -> str:
    """Apache httpd in an image built from Debian's apache2 (~40 s once); skips where it cannot be had."""
    from tests.images import APACHE_IMAGE, APACHE_PACKAGES, ImageUnavailable, debian_image

    try:
        return debian_image(APACHE_IMAGE, APACHE_PACKAGES)
    except ImageUnavailable as exc:
        pytest.skip(f"needs a container engine and an Apache httpd image: {exc}")


@pytest.mark.slow
def test_apache_httpd_in_a_container_passes_runtime_add_and_change(tmp_path: Path,
                                                                   request: pytest.FixtureRequest) -> None:
    vendor = VENDORS["apache"]
    why = missing(vendor, container=True)
    if why is not None:
        pytest.skip(why)
    _passes(tmp_path, vendor, image=request.getfixturevalue("apache_image"))  # built only when it can run
