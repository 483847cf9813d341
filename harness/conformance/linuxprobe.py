"""Reading a Linux node the way an administrator would, in one POSIX shell round trip over SSH:
its distribution and boot id, each egress service's state as systemd shows it (running, main
PID, start time, whether its unit files changed since they were loaded), the proxy variables
each running service process holds (``/proc/PID/environ``: both spellings, as read, not as
configured), the certificates of the bundle every TLS client on the node reads (the extracted
one, not the anchors), and the files under the places a reconciler keeps its own.

The judge's own knowledge of the distributions lives here (``LAYOUTS``): where each keeps its
extracted bundle and anchors, and which container runtime its nodes run. A node whose
distribution is not in it is refused by name, never read with another's layout.

The bundle travels only when it changed: the script is given the digest the judge already
holds for that node, and prints the bundle's text only if the node's differs (at 1,000 nodes a
~150-certificate bundle on every look would be ~200 MB per look of the fleet).

The traffic probes (``fetch_command``, ``pull_command``) run ``curl`` and ``crictl`` as the
node's services would: ``curl`` with exactly the proxy variables the kubelet's process holds
(libcurl's rules then decide: ``http_proxy`` only in lower case), ``crictl pull`` through the
runtime, whose own environment decides. Values reach the node as single-quoted shell words.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import datetime as dt
import hashlib
import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass

from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.core.contract import PROXY_SPELLINGS, PROXY_VARIABLES
from proxyfleet.core.nodessh import NodeConnection, NodeError
from proxyfleet.core.probetargets import check_image, check_url
from proxyfleet.core.systemd.execenvironment import EnvironmentFileError, Warnings
from proxyfleet.core.systemd.specifiers import SpecifierContext
from proxyfleet.core.systemd.unitenvironment import start_environment, unit_settings

KUBELET = "kubelet.service"


@dataclass(frozen=True)
class LinuxLayout:
    """Where one family of distributions keeps what the judge reads."""

    os_ids: tuple[str, ...]  # /etc/os-release ID values
    runtime: str  # the container runtime's unit
    bundle: str  # the extracted bundle TLS clients read
    anchors: str  # where an administrator's CAs go before extraction
    places: tuple[str, ...]  # where a reconciler keeps files of its own (drop-ins, environment files, anchors)

    @property
    def services(self) -> tuple[str, ...]:
        """The units whose egress the proxy settings govern."""
        return (self.runtime, KUBELET)


RHCOS = LinuxLayout(("rhcos", "fedora", "rhel", "centos"), "crio.service",
                    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/pki/ca-trust/source/anchors",
                    ("/etc/systemd/system", "/etc/mco", "/etc/pki/ca-trust/source/anchors"))
DEBIAN = LinuxLayout(("debian", "ubuntu"), "containerd.service", "/etc/ssl/certs/ca-certificates.crt",
                     "/usr/local/share/ca-certificates",
                     ("/etc/systemd/system", "/etc/mco", "/usr/local/share/ca-certificates"))
LAYOUTS = (RHCOS, DEBIAN)


class UnknownDistribution(NodeError):
    """The node runs a distribution the judge has no layout for."""


@dataclass(frozen=True)
class ServiceState:
    """One egress service as systemd and ``/proc`` show it."""

    running: bool
    pid: int
    started: dt.datetime | None  # its main process' start (ExecMainStartTimestamp), None: never started
    needs_reload: bool  # its unit files changed since systemd loaded them (NeedDaemonReload)
    environment: dict[str, str]  # the proxy variables (either spelling) its running process holds
    found: bool = True  # a unit file exists (LoadState not "not-found")


@dataclass(frozen=True)
class LinuxNodeState:
    """One observation of a Linux node."""

    os_id: str
    layout: LinuxLayout
    boot_id: str
    services: dict[str, ServiceState]  # unit -> state
    bundle_digest: str  # sha256 of the extracted bundle ("": none there)
    trusted: frozenset[str]  # SHA-1 thumbprints of the extracted bundle's certificates
    files: frozenset[str]
    # Asked for only where no lab evidence tells (``probe_script(unit_files=True)``): each egress
    # unit's files (path, text), fragment then drop-ins as systemd loaded them; the environment
    # files read (path -> text, None: missing); what the unit specifiers expand to on the node
    unit_files: dict[str, tuple[tuple[str, str], ...]] | None = None
    environment_files: dict[str, str | None] = dataclasses.field(default_factory=dict)
    identity: dict[str, str] = dataclasses.field(default_factory=dict)

    def started(self) -> dict[str, dt.datetime | None]:
        """Each egress service's running process' start (None: not running)."""
        return {unit: s.started if s.running else None for unit, s in self.services.items()}


_SAFE_WORD = re.compile(r"[A-Za-z0-9_./@-]+")


def _words(values: tuple[str, ...]) -> str:
    """Constant paths and unit names as shell words (checked safe: no quoting needed)."""
    for value in values:
        if not _SAFE_WORD.fullmatch(value):
            raise ValueError(f"{value!r} needs quoting in the probe script")
    return " ".join(values)


def _layout_case() -> str:
    """Shell that sets ``bundle``, ``places`` and ``services`` from the node's os-release ID."""
    arms = [f"    {'|'.join(layout.os_ids)}) bundle={_words((layout.bundle,))}; places=\"{_words(layout.places)}\"; "
            f"services=\"{_words(layout.services)}\" ;;\n" for layout in LAYOUTS]
    return ('case "$ID" in\n' + "".join(arms)
            + '    *) echo "os $ID"; exit 0 ;;\nesac\n')


SHOWN = ("LoadState", "ActiveState", "MainPID", "NeedDaemonReload", "ExecMainStartTimestamp")


def environment_files_script(paths: Iterable[str]) -> str:
    """Each of ``paths`` (environment files a unit names: node data, so quoted) as an ``envfile``
    line (base64 path and text) or ``envfile-missing``."""
    words = " ".join(shlex.quote(p) for p in paths)
    return (f"for f in {words}; do\n"
            '    if [ -f "$f" ]; then echo "envfile $(printf \'%s\' "$f" | base64 -w0) $(base64 -w0 < "$f")"\n'
            '    else echo "envfile-missing $(printf \'%s\' "$f" | base64 -w0)"; fi\n'
            "done\n") if words else ""


def _unit_files_lines() -> str:
    """Inside the probe's unit loop: the unit's files as systemd loaded them (its fragment, then
    its drop-ins), each a ``unitfile`` line (base64 path and text) or ``unitfile-missing``."""
    return ('    for f in $(systemctl show -p FragmentPath --value "$unit") '
            '$(systemctl show -p DropInPaths --value "$unit"); do\n'
            '        if [ -f "$f" ]; then echo "unitfile $unit $(printf \'%s\' "$f" | base64 -w0) '
            '$(base64 -w0 < "$f")"\n'
            '        else echo "unitfile-missing $unit $(printf \'%s\' "$f" | base64 -w0)"; fi\n'
            "    done\n")


def probe_script(known_digest: str = "", unit_files: bool = False, environment_files: Iterable[str] = ()) -> str:
    """One round trip; ``known_digest``: the bundle digest the judge already holds (its text is
    then left out when unchanged). Tagged lines, parsed by ``parse_probe``; what a value could
    hold (a process's environment, a file's name) travels base64-encoded, never as a line.
    ``unit_files``: also each egress unit's files, the node's identity (for specifiers) and the
    ``environment_files`` named (those the last look found the units naming)."""
    pattern = "|".join(PROXY_SPELLINGS)
    known = known_digest if re.fullmatch(r"[0-9a-f]{64}", known_digest) else "-"
    identity = ('echo "identity $(printf \'host=%s\\0machine=%s\\0id=%s\\0version=%s\\0variant=%s\' '
                '"$(uname -n)" "$(cat /etc/machine-id 2>/dev/null)" "$ID" "$VERSION_ID" "$VARIANT_ID" '
                '| base64 -w0)"\n') if unit_files else ""
    return ("set -f\nID=\n"  # no globbing: paths from the node are split on blanks, never expanded
            "if [ -r /etc/os-release ]; then . /etc/os-release; elif [ -r /usr/lib/os-release ]; then "
            ". /usr/lib/os-release; fi\n"
            + _layout_case() +
            'echo "os $ID"\n'
            'echo "boot $(cat /proc/sys/kernel/random/boot_id)"\n'
            + identity +
            "for unit in $services; do\n"
            f"    state=$(systemctl show --timestamp=us+utc -p {','.join(SHOWN)} \"$unit\") || "
            '{ echo "systemctl show $unit failed" >&2; exit 3; }\n'
            "    echo \"unit $unit $(printf '%s' \"$state\" | tr '\\n' '|')\"\n"
            "    pid=$(printf '%s\\n' \"$state\" | sed -n 's/^MainPID=//p')\n"
            '    if [ -n "$pid" ] && [ "$pid" != 0 ]; then\n'
            '        if [ -r "/proc/$pid/environ" ]; then\n'
            f"            echo \"environ $unit $(grep -zE '^({pattern})=' \"/proc/$pid/environ\" | base64 -w0)\"\n"
            '        else echo "environ-unreadable $unit $pid"; fi\n'
            "    fi\n"
            + (_unit_files_lines() if unit_files else "") +
            "done\n"
            + (environment_files_script(environment_files) if unit_files else "") +
            'if [ -f "$bundle" ]; then\n'
            "    digest=$(sha256sum < \"$bundle\" | cut -d' ' -f1)\n"
            '    echo "digest $digest"\n'
            f'    if [ "$digest" != {known} ]; then echo "bundle $(base64 -w0 < "$bundle")"; fi\n'
            "fi\n"
            'echo "files $(for place in $places; do if [ -d "$place" ]; then '
            'find "$place" \\( -type f -o -type l \\) -print0; fi; done | base64 -w0)"\n')


def _timestamp(text: str) -> dt.datetime | None:
    """systemd's ``--timestamp=us+utc`` form (``Wed 2026-11-18 11:06:40.250000 UTC``); empty: never."""
    if not text:
        return None
    try:
        return dt.datetime.strptime(text, "%a %Y-%m-%d %H:%M:%S.%f UTC").replace(tzinfo=dt.UTC)
    except ValueError:
        raise NodeError(f"not a systemd timestamp in the us+utc style: {text!r} (systemd before 251 ignores "
                        "show's --timestamp=; the judge needs 251 or later, as RHCOS 4.13+ and Debian 12 "
                        "have)") from None


def _service(unit: str, fields: str) -> ServiceState:
    values = dict(f.partition("=")[::2] for f in fields.split("|") if f)
    missing = [name for name in SHOWN if name not in values]
    if missing:
        raise NodeError(f"systemctl show {unit} answered without {', '.join(missing)}")
    try:
        pid = int(values["MainPID"])
    except ValueError:
        raise NodeError(f"not a MainPID: {values['MainPID']!r}") from None
    return ServiceState(values["ActiveState"] == "active" and pid != 0, pid,
                        _timestamp(values["ExecMainStartTimestamp"]), values["NeedDaemonReload"] == "yes", {},
                        found=values["LoadState"] != "not-found")


def _decoded(text: str, what: str) -> list[str]:
    """NUL-separated strings sent base64-encoded."""
    return [item for item in _text(text, what).split("\0") if item]


class BundleCache:
    """Thumbprints per bundle digest: a fleet's nodes share one bundle, parsed once."""

    def __init__(self) -> None:
        self._thumbprints: dict[str, frozenset[str]] = {}

    def known(self, digest: str) -> bool:
        return digest in self._thumbprints

    def thumbprints(self, digest: str, text: str | None) -> frozenset[str]:
        """The thumbprints of the bundle with ``digest``; ``text`` (base64) when it came along."""
        if text is None:
            if digest not in self._thumbprints:
                raise NodeError(f"the node left out a bundle (sha256 {digest}) the judge does not hold")
            return self._thumbprints[digest]
        try:
            data = base64.b64decode(text, validate=True)
        except binascii.Error as exc:
            raise NodeError(f"the bundle did not arrive as base64: {exc}") from None
        if hashlib.sha256(data).hexdigest() != digest:
            raise NodeError("the bundle's text does not match the digest the node printed")
        try:
            found = frozenset(c.thumbprint for c in certificates_in_bundle(data))
        except CertificateFormatError as exc:
            raise NodeError(f"the node's extracted bundle does not parse: {exc}") from None
        self._thumbprints[digest] = found
        return found


def parse_probe(text: str, cache: BundleCache) -> LinuxNodeState:
    """The probe script's output as a ``LinuxNodeState``; ``NodeError`` for anything else."""
    os_id = boot_id = digest = ""
    bundle_text: str | None = None
    services: dict[str, ServiceState] = {}
    environments: dict[str, dict[str, str]] = {}
    files: list[str] = []
    unit_files: dict[str, list[tuple[str, str]]] | None = None
    environment_files: dict[str, str | None] = {}
    identity: dict[str, str] = {}
    for line in text.splitlines():
        tag, _, rest = line.partition(" ")
        if tag == "os":
            os_id = rest.strip()
        elif tag == "boot":
            boot_id = rest.strip().replace("-", "")
        elif tag == "unit":
            unit, _, fields = rest.partition(" ")
            services[unit] = _service(unit, fields)
        elif tag == "environ":
            unit, _, encoded = rest.partition(" ")
            environments[unit] = dict(item.partition("=")[::2] for item in _decoded(encoded, f"{unit}'s environment"))
        elif tag == "environ-unreadable":
            unit, _, pid = rest.partition(" ")
            raise NodeError(f"cannot read /proc/{pid}/environ of {unit}: the probe must run as root")
        elif tag == "digest":
            digest = rest.strip()
        elif tag == "bundle":
            bundle_text = rest.strip()
        elif tag == "files":
            files = _decoded(rest.strip(), "the file list")
        elif tag == "identity":
            identity = dict(item.partition("=")[::2] for item in _decoded(rest.strip(), "the node's identity"))
            unit_files = {}
        elif tag in ("unitfile", "unitfile-missing"):
            unit, _, encoded = rest.partition(" ")
            path_text, _, body = encoded.partition(" ")
            path = _text(path_text, f"a file name of {unit}")
            if tag == "unitfile-missing":
                raise NodeError(f"systemd names {path!r} among {unit}'s files, and it is not a file there")
            if unit_files is None:
                raise NodeError("the Linux probe sent a unit's files before the node's identity")
            unit_files.setdefault(unit, []).append((path, _text(body, f"{unit}'s file {path}")))
        elif tag in ("envfile", "envfile-missing"):
            path, content = _environment_file(tag, rest)
            environment_files[path] = content
        else:
            raise NodeError(f"not a line of the Linux probe: {line[:80]!r}")
    layout = next((lay for lay in LAYOUTS if os_id in lay.os_ids), None)
    if layout is None:
        raise UnknownDistribution(f"the node runs {os_id or 'a distribution without an os-release ID'!r}, which "
                                  f"the judge has no layout for (it knows: "
                                  f"{', '.join(i for lay in LAYOUTS for i in lay.os_ids)})")
    if not boot_id or set(services) != set(layout.services):
        raise NodeError(f"the Linux probe's output is incomplete: {text[:200]!r}")
    services = {unit: dataclasses.replace(s, environment=environments.get(unit, {})) for unit, s in services.items()}
    trusted = cache.thumbprints(digest, bundle_text) if digest else frozenset()
    return LinuxNodeState(os_id, layout, boot_id, services, digest, trusted, frozenset(files),
                          None if unit_files is None else {u: tuple(f) for u, f in unit_files.items()},
                          environment_files, identity)


def _environment_file(tag: str, rest: str) -> tuple[str, str | None]:
    """An ``envfile`` line's path and text, or an ``envfile-missing`` line's path and None."""
    path_text, _, body = rest.partition(" ")
    path = _text(path_text, "an environment file's name")
    return path, _text(body, f"the environment file {path}") if tag == "envfile" else None


def _text(encoded: str, what: str) -> str:
    """One base64-encoded text (a file's name or contents, as the node has it)."""
    try:
        data = base64.b64decode(encoded.strip(), validate=True)
    except binascii.Error as exc:
        raise NodeError(f"{what} did not arrive as base64: {exc}") from None
    return data.decode("utf-8", "surrogateescape")


def unit_context(state: LinuxNodeState, unit: str) -> SpecifierContext:
    """What ``unit``'s specifiers expand to on the node the state is of."""
    files = (state.unit_files or {}).get(unit, ())
    fragment = files[0][0] if files and not files[0][0].endswith(".conf") else ""
    ident = state.identity
    return SpecifierContext(unit, fragment_path=fragment, hostname=ident.get("host") or "localhost",
                            machine_id=ident.get("machine") or "0" * 32, boot_id=state.boot_id,
                            os_release={"ID": ident.get("id", ""), "VERSION_ID": ident.get("version", ""),
                                        "VARIANT_ID": ident.get("variant", ""), "BUILD_ID": "", "IMAGE_ID": "",
                                        "IMAGE_VERSION": ""})


def environment_files_named(state: LinuxNodeState) -> set[str]:
    """Every environment file the egress units' files name (their text is needed to know what
    the units start with)."""
    named: set[str] = set()
    for unit, files in (state.unit_files or {}).items():
        named |= {ref.path for ref in unit_settings(files, unit_context(state, unit), Warnings()).environment_files}
    return named


def boot_environments(state: LinuxNodeState) -> dict[str, dict[str, str] | None]:
    """Each egress unit's proxy variables as its files alone give them, read with systemd's own
    rules (``core.systemd``): what the next boot starts it with (None: it would not start — no
    unit file, or an environment file missing that is not optional). ``state`` must hold the
    units' files and every environment file they name."""
    if state.unit_files is None:
        raise ValueError("the look did not read the units' files")
    found: dict[str, dict[str, str] | None] = {}
    for unit, service in state.services.items():
        if not service.found:
            found[unit] = None
            continue
        files = state.unit_files.get(unit, ())
        settings = unit_settings(files, unit_context(state, unit), Warnings())
        missing = [r.path for r in settings.environment_files if r.path not in state.environment_files]
        if missing:
            raise ValueError(f"the look did not read {', '.join(missing)}")
        try:
            environment = start_environment(settings, {}, state.environment_files.get, Warnings())
        except EnvironmentFileError:
            found[unit] = None
            continue
        found[unit] = {k: v for k, v in environment.items() if k.upper() in PROXY_VARIABLES}
    return found


def _fetch_script() -> str:
    """As root (the kubelet's environment is root's to read): the kubelet's proxy variables become
    ``export NAME='value'`` lines read by a clean shell from its stdin — a proxy's password is on no
    command line — which then runs curl on the URL (``$1``)."""
    pattern = "|".join(PROXY_SPELLINGS)
    quote = "s/'/'\\\\\\\\''/g; s/^\\([A-Za-z_][A-Za-z0-9_]*\\)=/export \\1='/; s/$/'/"
    return (f"pid=$(systemctl show -p MainPID --value {KUBELET}) || exit 2\n"
            'if [ "$pid" = 0 ]; then echo "the kubelet is not running: no environment to fetch with" >&2; exit 2; fi\n'
            'if [ ! -r "/proc/$pid/environ" ]; then echo "cannot read the kubelet\'s environment" >&2; exit 2; fi\n'
            f"grep -zE '^({pattern})=' \"/proc/$pid/environ\" | sed -z \"{quote}\" | tr '\\0' '\\n' | "
            "env -i PATH=\"$PATH\" sh -c '. /dev/stdin; exec curl -sS -f -- \"$0\" </dev/null' \"$1\"\n")


def fetch_command(url: str) -> str:
    """``curl -sS -f -- URL`` with exactly the proxy variables the kubelet's running process holds
    (what a libcurl client under the node's proxy configuration would use), as root; raises
    ``ProbeTargetError`` for a URL ``check_url`` refuses (nothing is sent)."""
    return f"sudo -n sh -c {shlex.quote(_fetch_script())} sh {shlex.quote(check_url(url))}"


def pull_command(image: str) -> str:
    """``crictl pull -- IMAGE`` as root (the runtime's socket is root's); raises
    ``ProbeTargetError`` for a reference ``check_image`` refuses."""
    check_image(image)
    return f"sudo -n crictl pull -- {shlex.quote(image)}"


async def observe(connection: NodeConnection, cache: BundleCache, known_digest: str = "", unit_files: bool = False,
                  environment_files: Iterable[str] = ()) -> LinuxNodeState:
    """One look at the node behind ``connection``, as root (``/proc/PID/environ`` of root's
    services is root's to read): the script on stdin of ``sudo -n sh``. Raises ``NodeError`` when
    the node cannot be read. ``unit_files``, ``environment_files``: as ``probe_script``."""
    text = await _as_root(connection, probe_script(known_digest, unit_files, environment_files), "the Linux probe")
    return parse_probe(text, cache)


async def read_environment_files(connection: NodeConnection, paths: Iterable[str]) -> dict[str, str | None]:
    """The text of each of ``paths`` on the node (None: missing), as root."""
    found: dict[str, str | None] = {}
    text = await _as_root(connection, environment_files_script(paths), "reading environment files")
    for line in text.splitlines():
        tag, _, rest = line.partition(" ")
        if tag not in ("envfile", "envfile-missing"):
            raise NodeError(f"not a line of an environment file read: {line[:80]!r}")
        path, content = _environment_file(tag, rest)
        found[path] = content
    return found


async def _as_root(connection: NodeConnection, script: str, what: str) -> str:
    """``script``'s output, run on stdin of ``sudo -n sh``; ``NodeError`` unless it exits 0."""
    result = await connection.run("sudo -n sh", limit=20, input=script)
    if result.exit_status is None:  # the channel closed with no exit status: the node went away
        raise NodeError(f"lost the SSH session to {connection.target.address} before {what} finished "
                        f"(the node going down?){': ' + str(result.stderr).strip()[:300] if result.stderr else ''}")
    if result.exit_status != 0:
        raise NodeError(f"{what} on {connection.target.address} exited {result.exit_status}: "
                        f"{str(result.stderr or '').strip()[:300]}")
    return str(result.stdout or "")
