"""Environment semantics of services and sessions (DESIGN.md §3), on the plain state."""

from __future__ import annotations

from pathlib import Path

from proxyfleet.simulators.windows.machine import WindowsMachine
from proxyfleet.simulators.windows.registry import MACHINE_ENVIRONMENT
from tests.support import new_machine


def set_machine_variable(machine: WindowsMachine, name: str, value: str) -> None:
    key = machine.registry.key(MACHINE_ENVIRONMENT)
    assert key is not None
    key.set(name, value, "String")


def test_strict_model_services_keep_the_boot_environment_across_restart(tmp_path: Path) -> None:
    machine = new_machine(tmp_path)
    set_machine_variable(machine, "HTTP_PROXY", "http://proxy:3128")
    assert machine.session_environment("Administrator")["HTTP_PROXY"] == "http://proxy:3128"
    machine.restart_service("containerd", force=True)
    process = machine.services["containerd"].process
    assert process is not None and "HTTP_PROXY" not in process.environment
    machine.shutdown()
    machine.boot()
    process = machine.services["containerd"].process
    assert process is not None and process.environment["HTTP_PROXY"] == "http://proxy:3128"


def test_other_model_restart_reads_the_current_machine_environment(tmp_path: Path) -> None:
    machine = new_machine(tmp_path, restart_reads_current_environment=True)
    set_machine_variable(machine, "HTTPS_PROXY", "http://proxy:3128")
    assert "HTTPS_PROXY" not in machine.services["kubelet"].process.environment  # type: ignore[union-attr]
    machine.restart_service("kubelet", force=True)
    assert machine.services["kubelet"].process.environment["HTTPS_PROXY"] == "http://proxy:3128"  # type: ignore[union-attr]


def test_per_service_environment_applies_when_the_service_starts(tmp_path: Path) -> None:
    machine = new_machine(tmp_path)
    key = machine.registry.key(r"HKEY_LOCAL_MACHINE\SYSTEM\CurrentControlSet\Services\containerd")
    assert key is not None
    key.set("Environment", ["HTTP_PROXY=http://svc:1", "NO_PROXY=.svc"], "MultiString")
    assert "HTTP_PROXY" not in machine.services["containerd"].process.environment  # type: ignore[union-attr]
    machine.restart_service("containerd", force=True)
    environment = machine.services["containerd"].process.environment  # type: ignore[union-attr]
    assert environment["HTTP_PROXY"] == "http://svc:1" and environment["NO_PROXY"] == ".svc"
    assert "HTTP_PROXY" not in machine.services["kubelet"].process.environment  # type: ignore[union-attr]


def test_boots_get_new_ids_and_restart_every_automatic_service(tmp_path: Path) -> None:
    machine = new_machine(tmp_path)
    first = machine.boots[-1]
    pids = {s.name: s.process.pid for s in machine.services.values()}  # type: ignore[union-attr]
    machine.shutdown()
    assert not machine.is_up and first.shutdown_at is not None
    second = machine.boot()
    assert second.boot_id != first.boot_id and second.booted_at > first.booted_at
    assert all(s.process and s.process.pid != pids[s.name] and s.process.boot_id == second.boot_id
               for s in machine.services.values())


def test_environment_names_are_case_insensitive(tmp_path: Path) -> None:
    machine = new_machine(tmp_path)
    set_machine_variable(machine, "http_proxy", "a")
    set_machine_variable(machine, "HTTP_PROXY", "b")
    assert machine.machine_environment() == {**machine.machine_environment(), "http_proxy": "b"}
    assert machine.session_environment("Administrator")["Http_Proxy"] == "b"
