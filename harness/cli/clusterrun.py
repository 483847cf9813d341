"""``proxyfleet conformance --kubeconfig …``: the workflows against an existing cluster, whose own
reconciler is judged through the API and SSH. Nothing is started. The Proxy, the trusted CA
ConfigMaps, ``windows-instances`` and the Nodes' cordons are saved first and put back at the end,
also when the run fails or is stopped (Ctrl-C, SIGTERM); ``--dry-run`` prints the plan and touches
nothing."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import os
import shlex
import urllib.parse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
from kubernetes import client
from rich.console import Console
from rich.text import Text

from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.core.kubeconfig import KubeconfigError, api_client, current_context
from proxyfleet.core.noproxy.urls import with_userinfo
from proxyfleet.core.privatedirs import NotPrivateError, private_directory
from proxyfleet.core.secretfiles import write_private
from proxyfleet.harness.cli.rollout import parse_duration
from proxyfleet.harness.cli.runproxy import RunProxySpec
from proxyfleet.harness.conformance.clustertarget import RUN_CA, ClusterTarget, ClusterTargetError, parse_instance
from proxyfleet.harness.lab.clustername import ClusterName, ClusterNameError, read_cluster_name
from proxyfleet.harness.lab.restorewait import wait_restored
from proxyfleet.harness.lab.restoring import RestoreReport, restore, signals_ignored
from proxyfleet.harness.lab.snapshot import ClusterSnapshot, SnapshotError
from proxyfleet.harness.lab.vendor import VendorProxyError, parse_listen
from proxyfleet.harness.lab.vendoroptions import ProxyOptions
from proxyfleet.simulators.network import ClusterEndpoint

# The workflows an existing cluster can run (the others need the lab: an install, faults …; drift
# there is the API half only: the hosts' half waits for the operator's periodic resync).
CLUSTER_WORKFLOWS = ("runtime-add", "change", "remove", "drift")


def cluster_options(function: Any) -> Any:
    """Add the existing-cluster options to a command (they arrive as keyword arguments)."""
    options: list[Callable[[Any], Any]] = [
        click.option("--kubeconfig", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Judge this cluster and its own reconciler instead of a lab."),
        click.option("--ssh-key", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="The private key the instances (and the --linux-instance workers) accept."),
        click.option("--ssh-port", default=22, show_default=True, type=click.IntRange(1, 65535),
                     help="The instances' SSH port."),
        click.option("--ssh-known-hosts", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="Only instances whose keys this known_hosts file lists (default: pin on first contact)."),
        click.option("--instance", "instances", multiple=True, metavar="ADDR=USER",
                     help="A Windows instance for the run (repeatable; default: windows-instances as it is)."),
        click.option("--linux-instance", "linux_instances", multiple=True, metavar="ADDR=USER",
                     help="A Linux worker judged beside them, reached with --ssh-key (repeatable; default: none)."),
        click.option("--internet-image",
                     help="An image pulled through the proxy (pull-internet is skipped without one)."),
        click.option("--intranet-image",
                     help="An image in NO_PROXY, pulled directly (pull-intranet is skipped without one)."),
        click.option("--http-url", help="A plain-HTTP URL fetched with curl.exe (fetch-http is skipped without one)."),
        click.option("--no-proxy", default="", help="The cluster's noProxy while the run's proxy is set."),
        click.option("--second-proxy-url",
                     help="The proxy the change workflow switches to (credentials: --proxy-auth-file)."),
        click.option("--proxy-hosts", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="With --proxy-listen: the hosts file the run's proxy resolves names with."),
        click.option("--proxy-egress", metavar="ADDR",
                     help="With --proxy-listen: the address the run's proxy connects from."),
        click.option("--proxy-upstream-ca", type=click.Path(exists=True, dir_okay=False, path_type=Path),
                     help="With --proxy-listen: the CAs the run's proxy trusts upstream (default: certifi's)."),
        click.option("--target-cluster", metavar="NAME",
                     help="The cluster's name (--dry-run prints it); nothing runs on another."),
        wait_restored_option,
        click.option("--dry-run/--no-dry-run", default=False,
                     help="Print the plan and the cluster's name; touch nothing."),
    ]
    for option in reversed(options):
        function = option(function)
    return function


WAIT_DEFAULT = "15m"  # --wait-restored without a value, and its default in CI


def wait_restored_option(function: Any) -> Any:
    """``--wait-restored[=TIMEOUT]``, shared by ``conformance --kubeconfig`` and ``restore``."""
    return click.option(
        "--wait-restored", metavar="TIMEOUT", is_flag=False, flag_value=WAIT_DEFAULT, default=None,
        help=f"Once the cluster is put back, wait until its nodes are too ({WAIT_DEFAULT}; on when CI is set, 0: off).",
    )(function)


def wait_seconds(value: str | None) -> float | None:
    """How long ``--wait-restored`` waits (None: not at all): as given; when not given, the
    default where the environment says it is CI (``CI`` set, as GitHub, GitLab and Prow set it)."""
    if value is None:
        value = WAIT_DEFAULT if os.environ.get("CI") else "0"
    value = {"true": WAIT_DEFAULT, "false": "0"}.get(str(value).lower(), str(value))  # a run file's yes/no
    try:
        seconds = parse_duration(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--wait-restored") from None
    if not math.isfinite(seconds) or seconds < 0:
        raise click.BadParameter(f"{value!r}: expected a duration such as 15m, or 0 for no wait",
                                 param_hint="--wait-restored")
    return seconds or None


def wait_until_restored(kubeconfig: Path, context: str | None, saved_cordons: dict[str, bool], seconds: float,
                        console: Console) -> dict[str, Any]:
    """Wait for the nodes to be back (``restorewait``), saying what is still rolling if they are
    not; what it found, as a report records it (``ConformanceRun.put_back``)."""
    found: dict[str, Any] = {"waited_s": seconds, "still_rolling": []}
    try:
        api = api_client(kubeconfig, context)
    except KubeconfigError as exc:
        console.print(Text(f"cannot wait for the cluster: {exc}", style="red"))
        return {**found, "error": str(exc)}
    console.print(f"waiting up to {seconds:.0f} s for the nodes to be back (--wait-restored)", markup=False,
                  highlight=False)
    progress = asyncio.run(wait_restored(api, saved_cordons, seconds,
                                         show=lambda line: console.print(line, markup=False, highlight=False)))
    if progress.done:
        console.print(f"the cluster is back: {progress.note()}", markup=False, highlight=False)
        return found
    console.print(Text(f"the cluster is still rolling after {seconds:.0f} s (--wait-restored):", style="red"))
    for line in progress.still:
        console.print(Text(f"  {line}", style="red"))
    return {**found, "still_rolling": list(progress.still)}


def _with_credentials(url: str, auth: str | None, option: str) -> str:
    """``url`` checked (http(s)://host:port, no credentials of its own) with ``auth`` put in."""
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme not in ("http", "https") or not parts.hostname or port is None or parts.path not in ("", "/"):
        raise click.UsageError(f"{option} {url!r}: expected http://HOST:PORT (or https:// for a TLS proxy)")
    if parts.username is not None or parts.password is not None:
        raise click.UsageError(f"{option}: put the credentials in --proxy-auth-file, not in the URL "
                               "(a command line is readable by every user of the machine)")
    plain = f"{parts.scheme}://{parts.netloc}"
    return with_userinfo(plain, auth) if auth else plain


def target_from(values: dict[str, Any], proxy: ProxyOptions) -> tuple[ClusterTarget, RunProxySpec | None] | None:
    """The cluster run the options ask for, and the proxy it starts itself if any (None: a lab
    run), checked before anything starts."""
    kubeconfig: Path | None = values.pop("kubeconfig")
    ssh_key: Path | None = values.pop("ssh_key")
    run_proxy_options = {name: values.pop(name, None) for name in ("proxy_hosts", "proxy_egress", "proxy_upstream_ca")}
    given = {name for name in ("ssh_known_hosts", "internet_image", "intranet_image", "http_url",
                               "second_proxy_url", "no_proxy", "target_cluster", "wait_restored")
             if values.get(name)}
    given |= {name for name, value in run_proxy_options.items() if value}
    given |= {"instance"} if values.get("instances") else set()
    given |= {"linux_instance"} if values.get("linux_instances") else set()
    given |= {"dry_run"} if values.get("dry_run") else set()
    if kubeconfig is None:
        if ssh_key is not None or given:
            names = ", ".join(f"--{n.replace('_', '-')}" for n in sorted(given | ({"ssh_key"} if ssh_key else set())))
            raise click.UsageError(f"{names}: only with --kubeconfig (an existing cluster)")
        return None
    if ssh_key is None:
        raise click.UsageError("--kubeconfig needs --ssh-key (the key the Windows instances accept)")
    if proxy.tls_port or proxy.tls_ca_file:
        raise click.UsageError("--proxy-tls-port/--proxy-tls-ca: TLS to the proxy is not supported against an "
                               "existing cluster yet")
    vendor = bool(proxy.command or proxy.image)
    if not vendor and (proxy.config or proxy.user or proxy.access_log or proxy.own_etc_hosts
                       or proxy.log_format != "auto"):
        raise click.UsageError("--proxy-config/--proxy-user/--proxy-access-log/--proxy-log-format/--proxy-etc-hosts: "
                               "only for a vendor's proxy the run starts (--proxy-command or --proxy-image with "
                               "--proxy-listen)")
    if proxy.unbound_egress:
        raise click.UsageError("--proxy-unbound-egress: the lab's firewall setting; against an existing cluster the "
                               "run's proxy leaves from --proxy-egress (or wherever the system routes it)")
    if vendor and not proxy.listen:
        raise click.UsageError("with --kubeconfig a proxy the run starts (--proxy-command/--proxy-image) needs "
                               "--proxy-listen ADDR:PORT: where the cluster's nodes reach it")
    run_proxy = None
    if proxy.listen:
        try:
            listen = parse_listen(proxy.listen, ClusterEndpoint)
        except VendorProxyError as exc:
            raise click.UsageError(str(exc)) from None
        if proxy.ca_file is not None and not vendor:
            raise click.UsageError("--proxy-ca: the run's own proxy (--proxy-listen) intercepts with a CA the run "
                                   "makes and publishes; --proxy-ca names the CA of a vendor's or a running proxy")
        run_proxy = RunProxySpec(listen, run_proxy_options["proxy_hosts"], run_proxy_options["proxy_egress"],
                                 run_proxy_options["proxy_upstream_ca"], command=proxy.command, image=proxy.image,
                                 config_files=tuple(proxy.config), user=proxy.user, access_log=proxy.access_log,
                                 log_format=proxy.log_format, own_etc_hosts=proxy.own_etc_hosts)
    elif any(run_proxy_options.values()):
        names = ", ".join(f"--{n.replace('_', '-')}" for n, v in run_proxy_options.items() if v)
        raise click.UsageError(f"{names}: only for the run's own proxy (--proxy-listen)")
    if not proxy.url and run_proxy is None:
        raise click.UsageError("--kubeconfig needs --proxy-url (a proxy already running where the nodes reach it) or "
                               "--proxy-listen (the run starts its own there)")
    auth = None
    if proxy.auth_file is not None:
        auth = proxy.auth_file.read_text().strip()
        if ":" not in auth:
            raise click.UsageError(f"--proxy-auth-file {proxy.auth_file}: expected user:password")
        if run_proxy is not None and not vendor:
            run_proxy = dataclasses.replace(run_proxy, auth=auth)  # the run's mitmdump demands them
    cas: list[bytes] = []
    if proxy.ca_file is not None:
        pem = proxy.ca_file.read_bytes()
        try:
            if not certificates_in_bundle(pem):
                raise CertificateFormatError("no certificate in it")
        except CertificateFormatError as exc:
            raise click.UsageError(f"--proxy-ca {proxy.ca_file}: {exc}") from None
        if run_proxy is not None:
            run_proxy = dataclasses.replace(run_proxy, vendor_ca_pem=pem)  # the vendor's: published by the run
        else:
            cas.append(pem)
    try:
        instances = dict(parse_instance(text) for text in values.pop("instances") or ())
        linux = dict(parse_instance(text, "--linux-instance", "10.0.6.10=core")
                     for text in values.pop("linux_instances", None) or ())
    except ClusterTargetError as exc:
        raise click.UsageError(str(exc)) from None
    both = sorted(set(instances) & set(linux))
    if both:
        raise click.UsageError(f"{', '.join(both)}: given as both --instance and --linux-instance "
                               "(a node has one kind)")
    second = values.pop("second_proxy_url")
    try:
        context = current_context(kubeconfig)  # pinned: named_cluster checks this one, the run uses it
    except KubeconfigError as exc:
        raise click.UsageError(str(exc)) from None
    target = ClusterTarget(
        kubeconfig=kubeconfig.resolve(), context=context, ssh_key_path=ssh_key.resolve(),
        proxy_url=_with_credentials(proxy.url or (run_proxy.url if run_proxy else ""), auth, "--proxy-url"),
        second_proxy_url=_with_credentials(second, auth, "--second-proxy-url") if second else "",
        proxy_ca_pems=cas, no_proxy=values.pop("no_proxy") or "", ssh_port=values.pop("ssh_port"),
        known_hosts=values.pop("ssh_known_hosts"), instances=instances, linux_instances=linux,
        internet_image=values.pop("internet_image"), intranet_image=values.pop("intranet_image"),
        http_url=values.pop("http_url"), proxy_log_format=proxy.log_format)
    try:
        target.check_destinations()
        target.ssh_key()
        target.pinned_host_keys([*instances, *linux])
    except ClusterTargetError as exc:
        raise click.UsageError(str(exc)) from None
    return target, run_proxy


def plan(target: ClusterTarget, workflows: tuple[str, ...], run_proxy: RunProxySpec | None = None,
         name: ClusterName | None = None) -> list[str]:
    """What the run will do, for ``--dry-run`` and the run's own header."""
    chosen = [w for w in CLUSTER_WORKFLOWS if not workflows or w in workflows]
    started = "nothing (the cluster's own reconciler is judged)"
    if run_proxy is not None:
        started = (f"{run_proxy.describe()}, resolving through {run_proxy.hosts_file or 'the system'}, "
                   "its CA published in the bundle; the cluster's own reconciler is judged")
    cordon = (["cordoned:     runtime-add cordons one schedulable Windows instance for maintenance (its cordon must "
               "survive the proxy's rollout) and uncordons it afterwards"] if "runtime-add" in chosen else [])
    drift = (["drift:        the operator's trusted-ca ConfigMap is deleted, then loses its injection label; "
              "the operator must put it back (the run does at the end if it did not)"] if "drift" in chosen else [])
    named = [f"cluster:      {name.describe()}; a run needs --target-cluster {name.name}"] if name else []
    return [*named, *target.describe(),
            f"workflows:    {', '.join(chosen)} (one at a time: they share the cluster)",
            f"saved first:  Proxy/cluster, openshift-config/{RUN_CA} and the Proxy's trusted CA ConfigMap, "
            f"{target.namespace}/windows-instances, {target.namespace}/trusted-ca's labels, Node cordons; put back "
            "at the end (also on failure, Ctrl-C, SIGTERM)",
            *cordon, *drift,
            f"started:      {started}"]


def named_cluster(target: ClusterTarget) -> ClusterName:
    """The name of the cluster the kubeconfig reaches (read-only: one GET), or one ``Error:`` line."""
    try:
        return asyncio.run(read_cluster_name(api_client(target.kubeconfig, target.context)))
    except (KubeconfigError, ClusterNameError) as exc:
        raise click.ClickException(str(exc)) from None


def check_workflows(workflows: tuple[str, ...]) -> None:
    lab_only = [w for w in workflows if w not in CLUSTER_WORKFLOWS]
    if lab_only:
        raise click.UsageError(f"--workflow {', '.join(lab_only)}: needs the embedded lab; against an existing "
                               f"cluster: {', '.join(CLUSTER_WORKFLOWS)}")


def snapshot_directory() -> Path:
    """Where cluster runs keep their snapshots until the cluster is put back: proxyfleet's own
    state directory (``$XDG_STATE_HOME/proxyfleet/cluster-runs``, by default under
    ``~/.local/state``), owner-only — never the run's scratch directory, which goes at its end."""
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    return private_directory(base / "proxyfleet" / "cluster-runs")


def restore_command(target: ClusterTarget, saved: Path) -> str:
    context = ["--context", target.context] if target.context else []
    return shlex.join(["proxyfleet", "restore", "--kubeconfig", str(target.kubeconfig), *context,
                       "--snapshot", str(saved)])


@contextmanager
def cluster_restored(target: ClusterTarget, console: Console) -> Iterator[ClusterSnapshot]:
    """Save the objects the run changes, and put them back however the body ends. The snapshot is
    written (owner-only) outside the run's scratch directory and deleted only once every object is
    back, so a run killed outright, or a put-back the cluster refused, can be undone by hand."""
    try:
        api = api_client(target.kubeconfig, target.context)
        snapshot = asyncio.run(ClusterSnapshot.take(api))
        assert snapshot.cluster is not None and snapshot.taken is not None
        name = f"{snapshot.taken:%Y%m%dT%H%M%SZ}-{snapshot.cluster.kube_system_uid[:8]}-{os.getpid()}.json"
        saved = snapshot.write(snapshot_directory() / name)
    except (KubeconfigError, SnapshotError, NotPrivateError) as exc:
        raise click.ClickException(f"cannot save the cluster's objects before the run: {exc}") from None
    target.snapshot_file = saved
    console.print(f"saved the cluster's Proxy, trusted CA ConfigMaps, windows-instances and Node cordons to {saved} "
                  f"(kept until they are back; if the run cannot put them back: {restore_command(target, saved)})",
                  markup=False, highlight=False)
    try:
        yield snapshot
    finally:
        report = _put_back(api, saved, console)
        if report.complete:
            saved.unlink(missing_ok=True)
            console.print("put the cluster back: " + ("; ".join(report.done) if report.done else "nothing had changed"),
                          markup=False, highlight=False)
        else:
            for line in report.failed:
                console.print(Text(f"could not put back {line}", style="red"))
            console.print(Text(f"the cluster is NOT as it was: the saved objects are kept in {saved}; once the "
                               f"cause is fixed, put them back with: {restore_command(target, saved)}", style="red"))
            raise click.ClickException(f"{len(report.failed)} object(s) of the cluster could not be put back "
                                       f"(saved in {saved})")


def _put_back(api: client.ApiClient, saved: Path, console: Console) -> RestoreReport:
    """The restore, with Ctrl-C and SIGTERM ignored until it is done (bounded: every request has a
    timeout and every object a few attempts)."""
    with signals_ignored():
        console.print("putting the cluster back (Ctrl-C and SIGTERM wait until it is done)")
        try:
            # from the file: the scenarios note there the maintenance cordons they set
            snapshot = ClusterSnapshot.read(saved)
        except SnapshotError as exc:
            return RestoreReport(failed=[f"the snapshot: {exc}"])
        return asyncio.run(restore(snapshot, api))


def write_target(target: ClusterTarget, scratch: Path) -> Path:
    """The scenario run's settings, owner-only (the proxy URL may carry credentials)."""
    target.baseline_file = scratch / "baselines.json"
    target.host_keys_file = scratch / "host-keys.json"  # pins made in one scenario bind the later ones
    return write_private(scratch / "cluster-run.json", json.dumps(target.to_json()))
