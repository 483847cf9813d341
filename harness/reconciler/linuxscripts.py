"""The POSIX shell a reference reconciler sends a Linux node: one command to observe what it owns
(each file's digest, the node's flavour and boot, its services), one to apply a plan of changes.

The files' contents travel on the command's stdin, one base64 line each, never in its text: sshd
hands the command to the user's shell as its argument, which every local user of a real node can
read in ``ps``, and ``proxy.env`` may carry a proxy's password. They land atomically: written
beside their target with their mode, then renamed over it, so a reader sees the old file or the
new one, never half.
"""

from __future__ import annotations

import base64
import hashlib
import shlex
from dataclasses import dataclass, field

from proxyfleet.core.contract import PROXY_SPELLINGS
from proxyfleet.harness.reconciler.linuxfiles import FileSpec, Flavour


class ObservationError(ValueError):
    """The node's answer is not what the observation script prints."""


@dataclass(frozen=True)
class LinuxObservation:
    """What a node holds of what the reconciler owns."""

    os_id: str
    boot_id: str
    digests: dict[str, str | None]  # path -> sha256 of its content, None: missing
    modes: dict[str, int] = field(default_factory=dict)
    main_pids: dict[str, int] = field(default_factory=dict)  # service -> MainPID (0: not running)


def digest(content: str) -> str:
    """What ``sha256sum`` prints for a file holding ``content``."""
    return hashlib.sha256(content.encode()).hexdigest()


def observe_script(paths: list[str], services: tuple[str, ...]) -> str:
    """Print ``os ID``, ``boot ID``, one ``file DIGEST MODE PATH`` (``- - PATH`` when missing)
    per path and one ``service PID UNIT`` per service."""
    lines = [". /etc/os-release && echo \"os $ID\"", "echo \"boot $(cat /proc/sys/kernel/random/boot_id)\""]
    for path in paths:
        quoted = shlex.quote(path)
        lines.append(f"if [ -f {quoted} ]; then echo \"file $(sha256sum < {quoted} | cut -d' ' -f1) "
                     f"$(stat -c %a {quoted}) \"{quoted}; else echo \"file - - \"{quoted}; fi")
    for service in services:
        lines.append(f"echo \"service $(systemctl show -p MainPID --value {shlex.quote(service)}) {service}\"")
    return "\n".join(lines) + "\n"


def parse_observation(text: str) -> LinuxObservation:
    """Read what ``observe_script`` printed; anything else is refused, naming the line."""
    os_id = boot_id = ""
    digests: dict[str, str | None] = {}
    modes: dict[str, int] = {}
    pids: dict[str, int] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        try:
            if kind == "os":
                os_id = rest.strip().strip('"')
            elif kind == "boot":
                boot_id = rest.strip().replace("-", "")
            elif kind == "file":
                sha, mode, path = rest.split(" ", 2)
                digests[path] = None if sha == "-" else sha
                if mode != "-":
                    modes[path] = int(mode, 8)
            elif kind == "service":
                pid, unit = rest.split(" ", 1)
                pids[unit] = int(pid)
            else:
                raise ValueError(kind)
        except ValueError:
            raise ObservationError(f"not an observation line: {line[:200]!r}") from None
    if not os_id or not boot_id:
        raise ObservationError("the node's answer names no os-release ID or boot id")
    return LinuxObservation(os_id, boot_id, digests, modes, pids)


def changed_files(wanted: dict[str, FileSpec], observed: LinuxObservation) -> dict[str, FileSpec]:
    """The files whose content or mode differs from what is wanted."""
    changed = {}
    for path, spec in wanted.items():
        have = observed.digests.get(path)
        if spec.content is None:
            if have is not None:
                changed[path] = spec
        elif have != digest(spec.content) or observed.modes.get(path) != spec.mode:
            changed[path] = spec
    return changed


@dataclass(frozen=True)
class ApplyCommand:
    """The command that applies a plan, and its stdin (the files' contents)."""

    command: str
    stdin: str


def apply_script(changes: dict[str, FileSpec], flavour: Flavour) -> ApplyCommand:
    """Write or remove ``changes``; rebuild the trust bundle if the anchor changed; reload systemd
    if a unit's drop-in changed. (Restarts and reboots are the caller's: a proxy change drains
    and reboots, as the MCO does.)"""
    lines = ["set -e", "umask 077"]
    stdin: list[str] = []
    for path, spec in changes.items():
        target = shlex.quote(path)
        if spec.content is None:
            lines.append(f"rm -f {target}")
            continue
        staged = shlex.quote(path + ".proxyfleet-new")
        stdin.append(base64.b64encode(spec.content.encode()).decode() + "\n")
        # printf is the shell's own: the content is on no command line on the node either
        lines += [f"mkdir -p {shlex.quote(path.rsplit('/', 1)[0] or '/')}",
                  "IFS= read -r content || { echo 'proxyfleet: the file contents ended early' >&2; exit 1; }",
                  f"printf '%s' \"$content\" | base64 -d > {staged}",
                  f"chmod {spec.mode:o} {staged}", f"mv -f {staged} {target}"]
    if flavour.anchor in changes:
        lines.append(f"{flavour.extract} >/dev/null")
    if any(path.startswith("/etc/systemd/") for path in changes):
        lines.append("systemctl daemon-reload")
    return ApplyCommand("\n".join(lines) + "\n", "".join(stdin))


def verify_script(services: tuple[str, ...]) -> str:
    """Print ``service PID UNIT`` for each service, then ``env UNIT NAME=VALUE`` for each proxy
    variable its running process started with (read from ``/proc/PID/environ``)."""
    pattern = "|".join(PROXY_SPELLINGS)
    lines = []
    for service in services:
        unit = shlex.quote(service)
        lines.append(f"pid=$(systemctl show -p MainPID --value {unit}); echo \"service $pid {service}\"")
        lines.append(f"if [ \"$pid\" != 0 ]; then tr '\\0' '\\n' < /proc/$pid/environ | grep -E '^({pattern})=' "
                     f"| sed 's/^/env {service} /' || true; fi")
    return "\n".join(lines) + "\n"


def parse_verification(text: str) -> dict[str, tuple[int, dict[str, str]]]:
    """Each service's MainPID (0: not running) and the proxy variables its process holds."""
    found: dict[str, tuple[int, dict[str, str]]] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "service":
            pid, _, unit = rest.partition(" ")
            try:
                found[unit] = (int(pid), {})
            except ValueError:
                raise ObservationError(f"not a verification line: {line[:80]!r}") from None
        elif kind == "env":
            unit, _, assignment = rest.partition(" ")
            name, _, value = assignment.partition("=")
            if unit in found:
                found[unit][1][name] = value
        else:
            raise ObservationError(f"not a verification line: {line[:80]!r}")
    return found


def environment_mismatches(wanted: dict[str, str | None], held: dict[str, str]) -> list[str]:
    """The proxy variables (either spelling) a service holds differently than ``wanted``."""
    wrong = []
    for name, value in wanted.items():
        for spelling in (name, name.lower()):
            if (held.get(spelling) or None) != value:
                wrong.append(spelling)
    return wrong


def needs_reboot(changes: dict[str, FileSpec], observed: LinuxObservation, proxy_env: str) -> bool:
    """Whether applying ``changes`` changes what a service reads (the MCO then drains and reboots):
    a drop-in added, changed or removed, or the environment file changed while a drop-in reads it.
    ``proxy.env`` written with no drop-in before or after (a proxy-less node's first pass) and the
    CA anchor alone (extracted, the runtime restarted) need none."""
    drop_ins = [p for p in (*changes, *observed.digests) if p.startswith("/etc/systemd/")]
    if any(p in changes for p in drop_ins):
        return True
    if proxy_env in changes:
        return any(observed.digests.get(p) is not None for p in drop_ins)
    return False


def as_root(script: str) -> str:
    """``script`` run as root by the node's SSH user (RHCOS' ``core`` and CAPI images' users may
    ``sudo`` without a password): the files it reads and writes are root's. Only the script's
    text — paths and modes — is on the command line; the contents come on stdin."""
    return "sudo -n sh -c " + shlex.quote(script)
