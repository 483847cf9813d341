"""What each check means on a Linux node, judged from a ``LinuxNodeState`` (``linuxprobe``): pure
functions, (target, observation) -> ``checks.Verdict``, as ``checks`` is for Windows.

- ``service-environment`` — every egress service's running process holds the cluster's proxy in
  both spellings (Go reads either, libcurl ``http_proxy`` only in lower case): not lab-only on
  Linux, ``/proc/PID/environ`` is the node's own evidence;
- ``units-loaded`` — no egress unit's files changed since systemd loaded them (``NeedDaemonReload``:
  a drop-in written without ``daemon-reload`` is one the next restart does not see);
- ``certificates`` — the extracted bundle every TLS client reads holds exactly the node's own CAs
  plus the cluster's trusted bundle (an anchor not extracted is trusted by nobody);
- ``services-restarted`` and ``files`` — the Windows meanings, from systemd's start times and
  the files under the Linux places (``checks.services_restarted``, ``checks.leftover_files``).
"""

from __future__ import annotations

from collections.abc import Mapping

from proxyfleet.core.contract import PROXY_VARIABLES
from proxyfleet.harness.conformance.checks import Verdict, env_text
from proxyfleet.harness.conformance.linuxprobe import LinuxNodeState


def both_spellings(wanted: Mapping[str, str | None]) -> dict[str, str]:
    """The variables a Linux service must hold for Proxy status's (upper-case names; None: unset)."""
    return {spelling: value for name in PROXY_VARIABLES if (value := wanted.get(name))
            for spelling in (name, name.lower())}


def service_environment(state: LinuxNodeState, wanted: Mapping[str, str | None]) -> Verdict:
    """Every egress service runs, holding exactly the proxy variables of Proxy status in both
    spellings, and no other proxy variable."""
    expected = both_spellings(wanted)
    wrong = []
    for unit, service in sorted(state.services.items()):
        if not service.found:
            wrong.append(f"{unit} not found (no unit file)")
        elif not service.running:
            wrong.append(f"{unit} not running")
        elif service.environment != expected:
            missing = sorted(set(expected) - set(service.environment))
            held = service.environment
            differing = sorted(k for k in expected if k in held and held[k] != expected[k])
            extra = sorted(set(service.environment) - set(expected))
            wrong.append(f"{unit}: " + "; ".join(filter(None, [
                f"missing {', '.join(missing)}" if missing else "",
                f"differs {env_text({k: service.environment[k] for k in differing})}" if differing else "",
                f"unexpected {env_text({k: service.environment[k] for k in extra})}" if extra else ""])))
    described = (f"{env_text(wanted)} in both spellings in every egress service" if expected
                 else "no proxy variable in any egress service")
    return Verdict(not wrong, described,
                   "every service" if not wrong else "; ".join(wrong[:3]))


def unit_environment(environments: Mapping[str, Mapping[str, str] | None], wanted: Mapping[str, str | None]) -> Verdict:
    """What each egress unit's own files give it (``Environment=``, ``EnvironmentFile=``, as a
    new boot's systemd reads them: the lab's model, or the node's files read over SSH) is Proxy
    status in both spellings: the configuration survives a reboot, not only the running processes
    (``systemctl set-environment`` reaches them and is gone at the next boot)."""
    expected = both_spellings(wanted)
    wrong = []
    for unit, environment in sorted(environments.items()):
        if environment is None:
            wrong.append(f"{unit} would not start")
        elif dict(environment) != expected:
            missing = sorted(set(expected) - set(environment))
            other = {k: v for k, v in environment.items() if expected.get(k) != v}
            wrong.append(f"{unit}: " + "; ".join(filter(None, [
                f"missing {', '.join(missing)}" if missing else "", f"holds {env_text(other)}" if other else ""])))
    described = (f"{env_text(wanted)} in both spellings from every egress unit's files" if expected
                 else "no proxy variable in any egress unit's files")
    return Verdict(not wrong, described, "every unit, as its next boot starts it" if not wrong
                   else "; ".join(wrong[:3]) + " (at the next boot)")


def units_loaded(state: LinuxNodeState) -> Verdict:
    """No egress unit's files changed since systemd loaded them."""
    stale = sorted(unit for unit, service in state.services.items() if service.needs_reload)
    return Verdict(not stale, "every egress unit loaded as its files are (no daemon-reload owed)",
                   "all loaded" if not stale else
                   f"changed on disk, not reloaded (systemctl daemon-reload): {', '.join(stale)}")


def certificates(state: LinuxNodeState, wanted: frozenset[str], bundle_size: int) -> Verdict:
    """The extracted bundle holds exactly ``wanted`` (the node's own CAs and the cluster's bundle)."""
    missing, extra = wanted - state.trusted, state.trusted - wanted
    ok = not missing and not extra
    observed = "exactly those" if ok else "; ".join(filter(None, [
        f"missing {len(missing)}: " + ", ".join(t[:12] + "…" for t in sorted(missing)[:3]) if missing else "",
        f"unexpected {len(extra)}: " + ", ".join(t[:12] + "…" for t in sorted(extra)[:3]) if extra else ""]))
    return Verdict(ok, f"{state.layout.bundle}: the node's own CAs + {bundle_size} bundle certificate(s)", observed)
