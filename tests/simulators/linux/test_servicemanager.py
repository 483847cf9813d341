"""systemd's traps for a proxy reconciler: a changed drop-in is not used until daemon-reload, an
environment file is read at every start, a process keeps the environment it started with."""

from __future__ import annotations

import os
from pathlib import Path

from proxyfleet.simulators.linux.servicemanager import ServiceManager, changed_on_disk, job_failed

UNITS = "etc/systemd/system"
KUBELET = "kubelet.service"


def node(root: Path) -> ServiceManager:
    unit = root / "usr/lib/systemd/system" / KUBELET
    unit.parent.mkdir(parents=True)
    unit.write_text("[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet\n")
    return ServiceManager(root)


def drop_in(root: Path, name: str, text: str) -> Path:
    path = root / UNITS / f"{KUBELET}.d" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    stamp = path.stat().st_mtime_ns + 1_000_000  # a later write, whatever the filesystem's clock grain
    os.utime(path, ns=(stamp, stamp))
    return path


def test_a_drop_in_changed_after_the_unit_loaded_is_not_used_until_daemon_reload(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    assert systemd.start(KUBELET).code == 0
    assert "HTTP_PROXY" not in systemd.running[KUBELET].environment
    drop_in(tmp_path, "http-proxy.conf", '[Service]\nEnvironment="HTTP_PROXY=http://proxy:3128"\n')
    assert systemd.needs_daemon_reload(KUBELET)
    restarted = systemd.restart(KUBELET)
    assert restarted.code == 0 and restarted.stderr == changed_on_disk(KUBELET) + "\n"
    assert "HTTP_PROXY" not in systemd.running[KUBELET].environment  # the old definition
    systemd.daemon_reload()
    assert not systemd.needs_daemon_reload(KUBELET)
    assert "HTTP_PROXY" not in systemd.running[KUBELET].environment  # a running process keeps its own
    assert systemd.restart(KUBELET).stderr == ""
    assert systemd.running[KUBELET].environment["HTTP_PROXY"] == "http://proxy:3128"
    # removing the drop-in is a change too
    (tmp_path / UNITS / f"{KUBELET}.d" / "http-proxy.conf").unlink()
    assert systemd.needs_daemon_reload(KUBELET)


def test_an_environment_file_is_read_at_every_start_without_a_reload(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    drop_in(tmp_path, "10-mco-default-env.conf", "[Service]\nEnvironmentFile=/etc/mco/proxy.env\n")
    env_file = tmp_path / "etc/mco/proxy.env"
    env_file.parent.mkdir(parents=True)
    env_file.write_text("HTTP_PROXY=http://u:p%40ss@proxy:3128\nNO_PROXY=.svc,.cluster.local\n")
    assert systemd.start(KUBELET).code == 0
    first = systemd.running[KUBELET]
    assert first.environment["HTTP_PROXY"] == "http://u:p%40ss@proxy:3128"  # no specifiers in a file
    env_file.write_text("HTTP_PROXY=http://new:3128\n")
    assert not systemd.needs_daemon_reload(KUBELET)  # the file is not a unit file
    assert systemd.running[KUBELET].environment["HTTP_PROXY"] == "http://u:p%40ss@proxy:3128"
    assert systemd.restart(KUBELET).code == 0
    assert systemd.running[KUBELET].environment["HTTP_PROXY"] == "http://new:3128"
    assert systemd.running[KUBELET].pid != first.pid


def test_a_missing_environment_file_fails_the_start_unless_optional(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    drop_in(tmp_path, "10-env.conf", "[Service]\nEnvironmentFile=/etc/mco/proxy.env\n")
    failed = systemd.start(KUBELET)
    assert failed.code == 1 and failed.stderr == job_failed(KUBELET) + "\n"
    assert KUBELET not in systemd.running
    assert "kubelet.service: Failed to load environment files: No such file or directory" in systemd.journal
    drop_in(tmp_path, "10-env.conf", "[Service]\nEnvironmentFile=-/etc/mco/proxy.env\n")
    systemd.daemon_reload()
    assert systemd.start(KUBELET).code == 0


def test_a_percent_in_a_drop_in_loses_the_variable_and_the_journal_says_why(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    drop_in(tmp_path, "http-proxy.conf",
            '[Service]\nEnvironment="HTTP_PROXY=http://u:p%40ss@proxy:3128" "http_proxy=http://u:p%%40ss@proxy:3128"\n')
    assert systemd.start(KUBELET).code == 0
    environment = systemd.running[KUBELET].environment
    assert "HTTP_PROXY" not in environment and environment["http_proxy"] == "http://u:p%40ss@proxy:3128"
    assert any("Failed to resolve specifiers in HTTP_PROXY=" in line for line in systemd.journal)


def test_an_unknown_unit(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    outcome = systemd.start("crio.service")
    assert outcome.code == 5 and outcome.stderr == "Failed to start crio.service: Unit crio.service not found.\n"


def test_a_unit_nowhere_is_refused_in_each_verbs_own_words(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    assert systemd.restart("crio.service").stderr == "Failed to restart crio.service: Unit crio.service not found.\n"
    stopped = systemd.stop("crio.service")
    assert (stopped.code, stopped.stderr) == (5, "Failed to stop crio.service: Unit crio.service not loaded.\n")
    assert systemd.stop(KUBELET).code == 0  # known, not running: nothing to do


def test_set_environment_reaches_services_started_later_and_a_reboot_forgets_it(tmp_path: Path) -> None:
    systemd = node(tmp_path)
    systemd.start(KUBELET)
    systemd.set_environment({"HTTP_PROXY": "http://proxy:3128", "PATH": "/opt/bin"})
    assert "HTTP_PROXY" not in systemd.running[KUBELET].environment  # already running: unchanged
    systemd.restart(KUBELET)
    assert systemd.running[KUBELET].environment["HTTP_PROXY"] == "http://proxy:3128"
    # the unit's own files give it nothing of the kind: what its next boot would start it with
    assert "HTTP_PROXY" not in (systemd.environment_at_boot(KUBELET) or {})
    # a unit's Environment= wins over the manager's
    drop_in(tmp_path, "http-proxy.conf", '[Service]\nEnvironment="HTTP_PROXY=http://unit:3128"\n')
    systemd.daemon_reload()
    systemd.restart(KUBELET)
    assert systemd.running[KUBELET].environment["HTTP_PROXY"] == "http://unit:3128"
    assert (systemd.environment_at_boot(KUBELET) or {})["HTTP_PROXY"] == "http://unit:3128"
    systemd.unset_environment(["PATH=/somewhere/else"])  # only while it has that value
    assert systemd.manager_environment()["PATH"] == "/opt/bin"
    systemd.unset_environment(["PATH"])
    assert systemd.manager_environment()["PATH"] != "/opt/bin"  # back to the manager's own
    systemd.boot([KUBELET])
    assert systemd.runtime_environment == {}


def test_what_a_unit_would_start_with_at_boot_needs_its_files_and_reads_nothing_into_the_manager(
        tmp_path: Path) -> None:
    systemd = node(tmp_path)
    drop_in(tmp_path, "env.conf", "[Service]\nEnvironmentFile=/etc/proxy.env\n")
    assert systemd.environment_at_boot(KUBELET) is None  # its environment file is missing: it would not start
    (tmp_path / "etc/proxy.env").write_text('HTTPS_PROXY="http://proxy:3128"\n')
    assert (systemd.environment_at_boot(KUBELET) or {})["HTTPS_PROXY"] == "http://proxy:3128"
    assert systemd.environment_at_boot("nothing.service") is None
    assert not systemd.loaded and not systemd.journal  # a look, not a load
