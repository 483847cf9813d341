"""An existing cluster judged from outside: what the run knows of it besides its API — how to reach
its Windows instances over SSH, which real destinations to send traffic to, and the proxy the run
publishes. Everything here comes from the user's options; nothing from a lab."""

from __future__ import annotations

import json
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncssh

from proxyfleet.core.contract import OPERATOR_NAMESPACE
from proxyfleet.core.knownhosts import KnownHosts, KnownHostsError
from proxyfleet.core.noproxy import redact_url
from proxyfleet.core.probetargets import ProbeTargetError, check_image, check_url
from proxyfleet.core.secretfiles import write_private
from proxyfleet.harness.conformance.evidence import TRAFFIC_CHECKS, ProbedDestination

# The trusted CA ConfigMap (in openshift-config) the run writes; saved and put back (deleted when
# it did not exist) like every object the run changes.
RUN_CA = "proxyfleet-run-ca"
# The file `proxyfleet conformance --kubeconfig` hands its scenario run (owner-only: the proxy URL
# may carry credentials).
FORMAT = "proxyfleet-cluster-run/v1"


class ClusterTargetError(ValueError):
    """The cluster run's settings are unusable (a missing key file, a malformed instance …)."""


@dataclass
class ClusterTarget:
    """The run's settings for an existing cluster. ``instances`` (address -> SSH user) empty: the
    cluster's ``windows-instances`` at the start of each scenario."""

    kubeconfig: Path
    ssh_key_path: Path
    proxy_url: str
    # the kubeconfig's context the run checked (--target-cluster) and uses throughout: a later
    # `kubectl config use-context` on the same file does not move the run (None: the current one)
    context: str | None = None
    proxy_https_url: str = ""
    second_proxy_url: str = ""  # what the change workflow switches to (none: that step is left out)
    proxy_ca_pems: list[bytes] = field(default_factory=list)
    no_proxy: str = ""
    ssh_port: int = 22
    known_hosts: Path | None = None
    instances: dict[str, str] = field(default_factory=dict)
    # Linux workers judged beside them (address -> SSH user): configured by the platform (the
    # Machine Config Operator), members of every step, in no instance ConfigMap; none by default
    linux_instances: dict[str, str] = field(default_factory=dict)
    internet_image: str | None = None
    intranet_image: str | None = None
    http_url: str | None = None
    namespace: str = OPERATOR_NAMESPACE
    # Where the run keeps each node's own Root store and files once seen without a proxy, for its
    # later scenarios (each begins on the cluster the previous one left).
    baseline_file: Path | None = None
    # The proxy the run started itself (--proxy-listen): its flow log, read as evidence of each
    # node's route (None: the proxy is not the run's, so no route is observed).
    proxy_flow_log: Path | None = None
    # …or a vendor's proxy the run started: its access log, the format to read it in (``accesslogs``)
    # and where it listens (to wait until it has logged every connection so far)
    proxy_access_log: Path | None = None
    proxy_log_format: str = "auto"
    proxy_listen: str = ""
    # The run's saved cluster objects: a maintenance cordon the run sets is noted there first, so
    # that the restore (also ``proxyfleet restore`` after a run killed outright) lifts it
    snapshot_file: Path | None = None
    # Where the run keeps the SSH host keys it pinned on first contact (no --ssh-known-hosts), so
    # that its later scenarios hold each node to the key its first one saw
    host_keys_file: Path | None = None

    @property
    def https_url(self) -> str:
        return self.proxy_https_url or self.proxy_url

    def is_run_proxy(self, url: str | None) -> bool:
        """Whether ``url`` names the proxy the run started (the one whose log the run reads)."""
        if url is None or (self.proxy_flow_log is None and self.proxy_access_log is None):
            return False
        mine, theirs = urllib.parse.urlsplit(self.proxy_url), urllib.parse.urlsplit(url)
        return (mine.hostname, mine.port) == (theirs.hostname, theirs.port)

    def destinations(self) -> list[ProbedDestination]:
        """The traffic checks' destinations the user named (each check without one is skipped)."""
        found = []
        if self.internet_image:
            found.append(ProbedDestination("pull-internet", self.internet_image, True, True))
        if self.intranet_image:
            found.append(ProbedDestination("pull-intranet", self.intranet_image, True, False))
        if self.http_url:
            found.append(ProbedDestination("fetch-http", self.http_url, False, True))
        return found

    def check_destinations(self) -> None:
        """Each destination is one a node's probe can carry (``probetargets``): an image reference
        containerd can read, or an http(s) URL of RFC 3986 characters with a host and no
        credentials (it would be on curl.exe's command line, and in the report)."""
        for destination in self.destinations():
            option = TRAFFIC_CHECKS[destination.check]
            try:
                if destination.image:
                    check_image(destination.text)
                else:
                    check_url(destination.text)
            except ProbeTargetError as exc:
                # a URL that may hold credentials is not repeated
                shown = "" if not destination.image and "@" in destination.text else f" {destination.text!r}"
                raise ClusterTargetError(f"{option}{shown}: {exc}") from None

    def ssh_key(self) -> asyncssh.SSHKey:
        try:
            return asyncssh.read_private_key(self.ssh_key_path)
        except (OSError, ValueError, asyncssh.KeyImportError) as exc:
            raise ClusterTargetError(f"--ssh-key {self.ssh_key_path}: cannot read a private key ({exc})") from None

    def pinned_host_keys(self, addresses: list[str]) -> dict[str, str]:
        """``--ssh-known-hosts``: the first key listed for each of ``addresses`` (strict: an address
        the file does not list is refused by ``NodeProbe``)."""
        if self.known_hosts is None:
            return {}
        try:
            known = KnownHosts(self.known_hosts)
        except KnownHostsError as exc:
            raise ClusterTargetError(f"--ssh-known-hosts {self.known_hosts}: {exc}") from None
        return {address: keys[0] for address in addresses if (keys := known.keys(address, self.ssh_port))}

    def host_key_pins(self, addresses: list[str]) -> dict[str, str]:
        """The keys the nodes must present: ``--ssh-known-hosts``' (strict: no other address is
        contacted, so nothing is pinned and the run's file is not read), else those an earlier
        scenario of the run pinned on first contact (``save_host_key``)."""
        if self.known_hosts is not None:
            return self.pinned_host_keys(addresses)
        return self._saved_host_keys()

    def _saved_host_keys(self) -> dict[str, str]:
        if self.host_keys_file is None or not self.host_keys_file.exists():
            return {}
        return {str(a): str(k) for a, k in json.loads(self.host_keys_file.read_text()).items()}

    def save_host_key(self, address: str, key: str) -> None:
        """Add a key pinned on first contact to the run's file (owner-only); a node's first pin is
        kept (a later scenario is refused another key, so never writes one)."""
        if self.host_keys_file is None or self.known_hosts is not None:
            return
        known = self._saved_host_keys()
        known.setdefault(address, key)
        write_private(self.host_keys_file, json.dumps(known, indent=1, sort_keys=True))

    def read_baselines(self) -> dict[str, tuple[frozenset[str], frozenset[str]]]:
        """Each node's own Root thumbprints and files, as an earlier scenario of the run saw them."""
        if self.baseline_file is None or not self.baseline_file.exists():
            return {}
        data = json.loads(self.baseline_file.read_text())
        return {a: (frozenset(v["root"]), frozenset(v["files"])) for a, v in data.items()}

    def save_baselines(self, found: dict[str, tuple[frozenset[str], frozenset[str]]]) -> None:
        """Add nodes' baselines to the run's file; a node's first one is kept."""
        if self.baseline_file is None:
            return
        known = {a: {"root": sorted(r), "files": sorted(f)} for a, (r, f) in self.read_baselines().items()}
        for address, (root, files) in found.items():
            known.setdefault(address, {"root": sorted(root), "files": sorted(files)})
        write_private(self.baseline_file, json.dumps(known))

    def describe(self) -> list[str]:
        """The plan, one line each, credentials redacted (``--dry-run`` prints it)."""
        lines = [f"cluster:      {self.kubeconfig}" + (f", context {self.context}" if self.context else ""),
                 "instances:    " + (", ".join(f"{u}@{a}" for a, u in self.instances.items())
                                     or f"the cluster's {self.namespace}/windows-instances"),
                 "linux nodes:  " + (", ".join(f"{u}@{a}" for a, u in self.linux_instances.items())
                                     + " (configured by the platform, judged by the Linux checks)"
                                     if self.linux_instances else "none (name them with --linux-instance ADDR=USER)"),
                 f"ssh:          key {self.ssh_key_path}, port {self.ssh_port}, host keys "
                 + (f"from {self.known_hosts}" if self.known_hosts else "pinned on first contact, for the whole run"),
                 f"proxy:        httpProxy {redact_url(self.proxy_url)}, httpsProxy {redact_url(self.https_url)}, "
                 f"{len(self.proxy_ca_pems)} CA certificate(s)"
                 + (f"; the change workflow switches to {redact_url(self.second_proxy_url)}"
                    if self.second_proxy_url else ""),
                 f"noProxy:      {self.no_proxy or '(none)'}"]
        for check in ("pull-internet", "pull-intranet", "fetch-http"):
            named = [d.text for d in self.destinations() if d.check == check]
            lines.append(f"{check + ':':14}{named[0] if named else 'skipped (no destination given)'}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "kubeconfig": str(self.kubeconfig), "context": self.context,
                "ssh_key": str(self.ssh_key_path),
                "proxy_url": self.proxy_url, "proxy_https_url": self.proxy_https_url,
                "second_proxy_url": self.second_proxy_url,
                "proxy_ca_pems": [p.decode() for p in self.proxy_ca_pems], "no_proxy": self.no_proxy,
                "ssh_port": self.ssh_port, "known_hosts": str(self.known_hosts) if self.known_hosts else None,
                "instances": self.instances, "linux_instances": self.linux_instances,
                "internet_image": self.internet_image,
                "intranet_image": self.intranet_image, "http_url": self.http_url, "namespace": self.namespace,
                "baseline_file": str(self.baseline_file) if self.baseline_file else None,
                "proxy_flow_log": str(self.proxy_flow_log) if self.proxy_flow_log else None,
                "proxy_access_log": str(self.proxy_access_log) if self.proxy_access_log else None,
                "proxy_log_format": self.proxy_log_format,
                "proxy_listen": self.proxy_listen,
                "snapshot_file": str(self.snapshot_file) if self.snapshot_file else None,
                "host_keys_file": str(self.host_keys_file) if self.host_keys_file else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ClusterTarget:
        if data.get("format") != FORMAT:
            raise ClusterTargetError(f"not a {FORMAT} file (format {data.get('format')!r})")
        return cls(kubeconfig=Path(data["kubeconfig"]), context=data.get("context") or None,
                   ssh_key_path=Path(data["ssh_key"]),
                   proxy_url=str(data["proxy_url"]), proxy_https_url=str(data.get("proxy_https_url") or ""),
                   second_proxy_url=str(data.get("second_proxy_url") or ""),
                   proxy_ca_pems=[str(p).encode() for p in data.get("proxy_ca_pems") or []],
                   no_proxy=str(data.get("no_proxy") or ""), ssh_port=int(data.get("ssh_port") or 22),
                   known_hosts=Path(data["known_hosts"]) if data.get("known_hosts") else None,
                   instances={str(a): str(u) for a, u in (data.get("instances") or {}).items()},
                   linux_instances={str(a): str(u) for a, u in (data.get("linux_instances") or {}).items()},
                   internet_image=data.get("internet_image"), intranet_image=data.get("intranet_image"),
                   http_url=data.get("http_url"),
                   namespace=str(data.get("namespace") or OPERATOR_NAMESPACE),
                   baseline_file=Path(data["baseline_file"]) if data.get("baseline_file") else None,
                   proxy_flow_log=Path(data["proxy_flow_log"]) if data.get("proxy_flow_log") else None,
                   proxy_access_log=Path(data["proxy_access_log"]) if data.get("proxy_access_log") else None,
                   proxy_log_format=str(data.get("proxy_log_format") or "auto"),
                   proxy_listen=str(data.get("proxy_listen") or ""),
                   snapshot_file=Path(data["snapshot_file"]) if data.get("snapshot_file") else None,
                   host_keys_file=Path(data["host_keys_file"]) if data.get("host_keys_file") else None)


def parse_instance(text: str, option: str = "--instance", example: str = "10.0.5.20=Administrator") -> tuple[str, str]:
    """``--instance ADDR=USER`` (or ``--linux-instance``, whose example user is ``core``)."""
    address, sep, user = text.partition("=")
    if not sep or not address.strip() or not user.strip():
        raise ClusterTargetError(f"{option} {text!r}: expected ADDRESS=USER (e.g. {example})")
    return address.strip(), user.strip()
