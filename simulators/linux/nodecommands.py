"""The node-aware commands of a simulated Linux node — those whose effect is the simulated
systemd's or the trust store's, not a file's — answered as the real programs answer.

``systemctl`` (systemd 252): ``start``, ``stop``, ``restart``, ``try-restart``, ``daemon-reload``,
``is-active``, ``show -p PROPERTY [--value] [--timestamp=STYLE]`` (``SHOWN_PROPERTIES``), and the
manager's environment (``set-environment``, ``unset-environment``, ``show-environment``: services
started later inherit it, a reboot forgets it), with ``-q``/``--quiet``
and ``--no-block`` (a job here ends before the call returns, so ``--no-block`` changes nothing),
read as its getopt reads them (``-qp MainPID``, ``--property=``, ``--``; its errors in getopt's
words); a unit named without a suffix is a ``.service``, as systemctl reads it. Its errors are its own
("Unknown command verb frob.", "Too few arguments.", "Failed to restart x.service: Unit
x.service not found."). A real verb this model does not serve (``status``, ``enable``, ``cat``, …),
or a property it does not keep, is refused saying so, never answered with a guess.

``systemctl reboot``, and ``reboot`` and ``shutdown -r now`` (on systemd nodes both are
systemctl): the reboot is queued and the call returns 0 at once, as systemd's does; the node goes
down a moment later (``node``), cutting every session — the one that asked too, sometimes before
its exit status reached the client. A delayed ``shutdown -r +5``, ``-c``, and ``reboot``'s
options are refused saying so.

``update-ca-trust`` (RHCOS's p11-kit script): with no argument or ``extract``, rebuilds the bundle
from the anchors (``truststores.rhcos_extract``); RHCOS's ``coreos-update-ca-trust.service`` runs it
at every boot before the services and on ``systemctl (re)start`` (``boot_trust_extraction``), so an
anchor written and then rebooted into is trusted, as on a real RHCOS worker. Debian's
``update-ca-certificates`` is not here: the node runs Debian's own script on its files.

Everything else a reconciler sends runs as the host's real program on the node's tree
(``nodemounts``).
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from proxyfleet.simulators.egress.records import EgressLog
from proxyfleet.simulators.linux.noderoot import Flavour
from proxyfleet.simulators.linux.servicemanager import Outcome, ServiceManager
from proxyfleet.simulators.linux.truststores import RHCOS, rhcos_extract
from proxyfleet.simulators.linux.unitpaths import unit_sources
from proxyfleet.simulators.network import LabNetwork

UNIT_SUFFIXES = (".service", ".socket", ".target", ".timer", ".mount", ".path", ".slice", ".scope", ".device",
                 ".swap", ".automount")
SERVED_VERBS = ("start", "stop", "restart", "try-restart", "daemon-reload", "is-active", "show", "reboot",
                "set-environment", "unset-environment", "show-environment")
# The manager's environment verbs: their arguments are assignments or names, not units.
ENVIRONMENT_VERBS = ("set-environment", "unset-environment", "show-environment")
# The properties ``show -p`` serves (``MainPID`` names the process whose /proc/PID/environ tells).
SHOWN_PROPERTIES = ("LoadState", "MainPID", "ActiveState", "NeedDaemonReload", "ExecMainStartTimestamp",
                    "FragmentPath", "DropInPaths")
# ``--timestamp=`` styles (systemctl(1), 252) this model prints; ``pretty`` is the default.
TIMESTAMP_STYLES = ("pretty", "us", "µs", "utc", "us+utc", "µs+utc", "unix")
# systemctl's other verbs (systemctl(1), 252): real, so not "unknown", but not modelled here.
OTHER_VERBS = frozenset({
    "list-units", "list-sockets", "list-timers", "list-jobs", "list-dependencies", "list-unit-files",
    "list-machines", "list-paths", "reload", "condrestart", "reload-or-restart", "try-reload-or-restart",
    "force-reload", "isolate", "kill", "clean", "freeze", "thaw", "is-failed", "status", "cat",
    "set-property", "bind", "mount-image", "help", "reset-failed", "enable", "disable", "reenable",
    "preset", "preset-all", "is-enabled", "mask", "unmask", "link", "revert", "add-wants", "add-requires",
    "edit", "get-default", "set-default", "import-environment", "daemon-reexec", "log-level", "log-target",
    "service-watchdogs", "is-system-running",
    "default", "rescue", "emergency", "halt", "poweroff", "kexec", "exit", "switch-root", "suspend",
    "hibernate", "hybrid-sleep", "suspend-then-hibernate", "start-transient",
})


@dataclass
class LinuxNodeModel:
    """What a node's commands act on: its tree, its flavour, its systemd, its clock, and where
    its traffic goes (its address, the lab's network, its egress log, the images it pulled)."""

    root: Path
    flavour: Flavour
    systemd: ServiceManager
    clock: Callable[[], float]
    # Asks the running node for a reboot (callable from any thread); None: this node has no power
    # cycle (a tree without its SSH server), so a reboot is refused saying so.
    power: Callable[[], None] | None = None
    # Held by whatever changes the model from a worker thread (a command's answer, a boot): the
    # node's commands take turns already (the shims' flock), but a boot must not meet a straggler.
    lock: threading.Lock = field(default_factory=threading.Lock)
    network: LabNetwork | None = None  # None: no name resolves (a node outside a lab)
    address: str = "127.0.0.1"  # where its connections leave from
    egress: EgressLog = field(default_factory=EgressLog)
    images: dict[str, str] = field(default_factory=dict)  # the runtime's: reference -> image id
    # Told (on the lab's loop) after every node command and boot: what runs may have changed.
    on_change: Callable[[], None] | None = None


    def use_root(self, root: Path) -> None:
        """Read and write the node's files at ``root`` from now on (the node's namespace's view
        while it runs, its tree on the host's disk when it does not)."""
        self.root = root
        self.systemd.root = root


def unit_name(text: str) -> str:
    """A unit as systemctl reads a name given on its command line (no suffix: a service)."""
    return text if text.endswith(UNIT_SUFFIXES) else f"{text}.service"


@dataclass
class SystemctlOptions:
    """The options of one ``systemctl`` call that this model serves, and its other words."""

    quiet: bool = False
    value_only: bool = False
    properties: list[str] = field(default_factory=list)
    timestamp: str = "pretty"
    words: list[str] = field(default_factory=list)


class OptionError(ValueError):
    """systemctl's own complaint about its options (getopt's wording)."""


def systemctl_options(args: list[str]) -> SystemctlOptions:
    """Read ``args`` as systemctl's getopt_long does: short options bundled (``-qp MainPID``,
    ``-pMainPID``), a long option's value after ``=`` or as the next word, options anywhere
    among the words, and ``--`` ending them."""
    options = SystemctlOptions()
    queue = list(args)
    while queue:
        arg = queue.pop(0)
        if arg == "--":
            options.words += queue
            break
        if arg.startswith("--"):
            name, has_value, value = arg[2:].partition("=")
            if name in ("quiet", "no-block", "value"):
                if has_value:
                    raise OptionError(f"systemctl: option '--{name}' doesn't allow an argument")
                options.quiet |= name == "quiet"
                options.value_only |= name == "value"
            elif name == "timestamp":
                if not has_value:
                    if not queue:
                        raise OptionError("systemctl: option '--timestamp' requires an argument")
                    value = queue.pop(0)
                if value not in TIMESTAMP_STYLES:
                    raise OptionError(f"Invalid value: {value}.")
                options.timestamp = value
            elif name == "property":
                if not has_value:
                    if not queue:
                        raise OptionError("systemctl: option '--property' requires an argument")
                    value = queue.pop(0)
                options.properties += value.split(",")
            else:
                raise OptionError(f"systemctl: unrecognized option '{arg}'")
        elif arg.startswith("-") and arg != "-":
            for index, letter in enumerate(arg[1:], start=1):
                if letter == "q":
                    options.quiet = True
                elif letter == "p":
                    value = arg[index + 1:]
                    if not value:
                        if not queue:
                            raise OptionError("systemctl: option requires an argument -- 'p'")
                        value = queue.pop(0)
                    options.properties += value.split(",")
                    break
                else:
                    raise OptionError(f"systemctl: invalid option -- '{letter}'")
        else:
            options.words.append(arg)
    return options


def systemctl(node: LinuxNodeModel, args: list[str]) -> Outcome:
    """``systemctl ARGS`` on the node."""
    try:
        options = systemctl_options(args)
    except OptionError as exc:
        return Outcome(1, stderr=f"{exc}\n")
    quiet, value_only, properties, words = options.quiet, options.value_only, options.properties, options.words
    if not words:
        return Outcome(1, stderr="Too few arguments.\n")  # 252 lists units here; not modelled: say so
    verb = words[0]
    if verb in ENVIRONMENT_VERBS:
        return manager_environment(node, verb, words[1:])
    units = [unit_name(w) for w in words[1:]]
    if verb not in SERVED_VERBS:
        if verb in OTHER_VERBS:
            return Outcome(1, stderr=f"proxyfleet's simulated systemctl does not model '{verb}' (it serves: "
                                     f"{', '.join(SERVED_VERBS)})\n")
        return Outcome(1, stderr=f"Unknown command verb {verb}.\n")
    if verb == "daemon-reload":
        return node.systemd.daemon_reload() if not units else Outcome(1, stderr="Too many arguments.\n")
    if verb == "reboot":
        if units:  # systemctl reboot ARG passes ARG to the kernel's reboot(2): not modelled
            return Outcome(1, stderr="proxyfleet's simulated systemctl does not model a reboot argument\n")
        return request_reboot(node, "systemctl")
    if not units:
        return Outcome(1, stderr="Too few arguments.\n")
    if verb == "show":
        return _show(node, units, properties, value_only, options.timestamp)
    if verb == "is-active":
        states = ["active" if u in node.systemd.running else "inactive" for u in units]
        code = 0 if any(s == "active" for s in states) else 3
        return Outcome(code, stdout="" if quiet else "".join(f"{s}\n" for s in states))
    outcomes = [_one(node, verb, unit) for unit in units]
    failed = [o for o in outcomes if o.code != 0]
    return Outcome(failed[0].code if failed else 0, stderr="".join(o.stderr for o in outcomes))


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_PLAIN = re.compile(r"[A-Za-z0-9_\-+=/.,:@%~^]*\Z")  # printed as is by show-environment


def _shell_value(value: str) -> str:
    """A value as ``show-environment`` prints it: as is when plain, else ``$'…'`` escaped."""
    if _PLAIN.match(value):
        return value
    escaped = "".join({"\\": "\\\\", "'": "\\'", "\n": "\\n", "\t": "\\t"}.get(c, c) for c in value)
    return f"$'{escaped}'"


def manager_environment(node: LinuxNodeModel, verb: str, words: list[str]) -> Outcome:
    """``systemctl set-environment VAR=VALUE…``, ``unset-environment VAR…``, ``show-environment``:
    the manager's runtime environment, which services started later inherit and a reboot forgets."""
    systemd = node.systemd
    if verb == "show-environment":
        if words:
            return Outcome(1, stderr="Too many arguments.\n")
        shown = systemd.manager_environment()
        return Outcome(0, stdout="".join(f"{k}={_shell_value(v)}\n" for k, v in sorted(shown.items())))
    if not words:
        return Outcome(1, stderr="Too few arguments.\n")
    if verb == "set-environment":
        pairs = [w.partition("=") for w in words]
        if any(not sep or not _NAME.match(name) for name, sep, _ in pairs):
            return Outcome(1, stderr="Failed to set environment: Invalid environment assignments\n")
        systemd.set_environment({name: value for name, _, value in pairs})
        return Outcome(0)
    if any(not _NAME.match(w.partition("=")[0]) for w in words):
        # (systemctl 252 says "set" for both verbs: one function serves them)
        return Outcome(1, stderr="Failed to set environment: Invalid environment variable names or assignments\n")
    systemd.unset_environment(words)
    return Outcome(0)


def format_timestamp(seconds: float, style: str) -> str:
    """A wall-clock time as systemd prints it in ``style`` (the node's zone is UTC, so ``pretty``
    and ``utc`` agree); 0: never, printed empty."""
    if not seconds:
        return ""
    if style == "unix":
        return f"@{int(seconds)}"
    moment = dt.datetime.fromtimestamp(seconds, dt.UTC)
    text = moment.strftime("%a %Y-%m-%d %H:%M:%S")
    if style in ("us", "µs", "us+utc", "µs+utc"):
        text += f".{moment.microsecond:06d}"
    return text + " UTC"


def _show(node: LinuxNodeModel, units: list[str], properties: list[str], value_only: bool,
          timestamp_style: str = "pretty") -> Outcome:
    """``systemctl show -p P,... [--value] UNIT...``: one block per unit, blank-line separated."""
    if not properties:
        return Outcome(1, stderr="proxyfleet's simulated systemctl shows only the properties asked for with -p "
                                 f"(it serves: {', '.join(SHOWN_PROPERTIES)})\n")
    unknown = [p for p in properties if p not in SHOWN_PROPERTIES]
    if unknown:
        return Outcome(1, stderr=f"proxyfleet's simulated systemctl does not model the property {unknown[0]!r} "
                                 f"(it serves: {', '.join(SHOWN_PROPERTIES)})\n")
    blocks = []
    for unit in units:
        process = node.systemd.running.get(unit)
        sources = unit_sources(node.systemd.root, unit)
        found = sources.fragment is not None or bool(sources.drop_ins)
        loaded = node.systemd.loaded.get(unit)
        shown = loaded.sources if loaded is not None else sources  # the files the manager loaded it from
        values = {"LoadState": "loaded" if found else "not-found", "MainPID": str(process.pid if process else 0),
                  "ActiveState": "active" if process else "inactive",
                  "NeedDaemonReload": "yes" if node.systemd.needs_daemon_reload(unit) else "no",
                  "ExecMainStartTimestamp": format_timestamp(node.systemd.main_started.get(unit, 0.0),
                                                             timestamp_style),
                  "FragmentPath": shown.fragment or "", "DropInPaths": " ".join(shown.drop_ins)}
        blocks.append("".join(f"{values[p]}\n" if value_only else f"{p}={values[p]}\n" for p in properties))
    return Outcome(0, stdout="\n".join(blocks))


def _one(node: LinuxNodeModel, verb: str, unit: str) -> Outcome:
    systemd, now = node.systemd, node.clock()
    if unit == node.flavour.trust_unit and verb in ("start", "restart", "try-restart"):
        return boot_trust_extraction(node)
    if verb == "start":
        return systemd.start(unit, now)
    if verb == "stop":
        return systemd.stop(unit)
    if verb == "try-restart":
        return systemd.restart(unit, now) if unit in systemd.running else Outcome(0)
    return systemd.restart(unit, now)


def update_ca_trust(node: LinuxNodeModel, args: list[str]) -> Outcome:
    """RHCOS's ``update-ca-trust [extract]``: the bundle rebuilt from the anchors."""
    if node.flavour.trust is not RHCOS:
        return Outcome(127, stderr="sh: 1: update-ca-trust: not found\n")
    if args not in ([], ["extract"]):
        return Outcome(1, stderr=f"proxyfleet's simulated update-ca-trust serves only 'extract' (given: "
                                 f"{' '.join(args)})\n")
    bundle = node.root / RHCOS.bundle.lstrip("/")
    bundle.parent.mkdir(parents=True, exist_ok=True)
    staged = bundle.with_name(bundle.name + ".new")
    staged.write_bytes(rhcos_extract(node.root))
    staged.replace(bundle)  # programs reading it see the old bundle or the new, never half
    return Outcome(0)


def boot_trust_extraction(node: LinuxNodeModel) -> Outcome:
    """The flavour's trust unit run (RHCOS's ``coreos-update-ca-trust.service``): ``update-ca-trust
    extract`` unless the anchors directory is empty (its ``ConditionDirectoryNotEmpty=``: the unit
    is skipped, which is no error). Its own active state is not modelled (a oneshot leaves no process)."""
    anchors = node.root / node.flavour.trust.anchors.lstrip("/")
    if not anchors.is_dir() or not any(anchors.iterdir()):
        return Outcome(0)
    return update_ca_trust(node, ["extract"])


def request_reboot(node: LinuxNodeModel, command: str) -> Outcome:
    """Queue the node's reboot: returns at once, as systemd's reboot job does."""
    if node.power is None:
        return Outcome(1, stderr=f"proxyfleet's simulated {command}: this node has no power cycle (no SSH "
                                 "server runs it), so it cannot reboot\n")
    node.power()
    return Outcome(0)


def reboot(node: LinuxNodeModel, args: list[str]) -> Outcome:
    """``reboot`` with no option: ``systemctl reboot``."""
    if args:
        return Outcome(1, stderr=f"proxyfleet's simulated reboot does not model {' '.join(args)!r} (it serves: "
                                 "reboot with no option)\n")
    return request_reboot(node, "reboot")


def shutdown(node: LinuxNodeModel, args: list[str]) -> Outcome:
    """``shutdown -r now`` (or ``+0``): ``systemctl reboot``. Anything else — a delay, a halt,
    ``-c`` — is refused saying so: a scheduled shutdown is not modelled."""
    if args in (["-r", "now"], ["--reboot", "now"], ["-r", "+0"], ["--reboot", "+0"]):
        return request_reboot(node, "shutdown")
    return Outcome(1, stderr=f"proxyfleet's simulated shutdown does not model {' '.join(args)!r} (it serves: "
                             "shutdown -r now)\n")


def powers_off(node: LinuxNodeModel, args: list[str]) -> Outcome:
    """``halt`` and ``poweroff``: a node that stays off is not modelled, so refused saying so."""
    return Outcome(1, stderr="proxyfleet's simulated node does not model halting or powering off (it serves: "
                             "systemctl reboot, reboot, shutdown -r now)\n")


COMMANDS: dict[str, Callable[[LinuxNodeModel, list[str]], Outcome]] = {
    "systemctl": systemctl,
    "reboot": reboot,
    "shutdown": shutdown,
    "halt": powers_off,
    "poweroff": powers_off,
    "update-ca-trust": update_ca_trust,
}


# systemd is a multi-call program: these are systemctl under other names (/usr/sbin/reboot ->
# ../bin/systemctl), and what it does depends on the name it was called by.
SYSTEMCTL_ALIASES = ("reboot", "shutdown", "halt", "poweroff")


def commands_for(flavour: Flavour) -> tuple[str, ...]:
    """The node-aware commands a node of ``flavour`` has (Debian has no ``update-ca-trust``)."""
    return tuple(name for name in COMMANDS
                 if name not in SYSTEMCTL_ALIASES and (name != "update-ca-trust" or flavour.trust is RHCOS))


def run_command(node: LinuxNodeModel, name: str, args: list[str]) -> Outcome:
    """One node-aware command, by name."""
    handler = COMMANDS.get(name)
    if handler is None:
        return Outcome(127, stderr=f"sh: 1: {name}: not found\n")
    return handler(node, args)
