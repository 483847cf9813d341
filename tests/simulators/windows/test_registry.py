"""Registry paths in every form PowerShell accepts, keys with case-insensitive value names, and the
node's hives as Windows lays them out."""

from __future__ import annotations

from proxyfleet.simulators.windows.registry import (
    MACHINE_ENVIRONMENT,
    Registry,
    canonical_key_path,
    drive_path,
)


def test_key_paths_in_every_form() -> None:
    expected = "HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet"
    assert canonical_key_path("HKLM:\\SYSTEM\\CurrentControlSet") == expected
    assert canonical_key_path("Registry::HKEY_LOCAL_MACHINE\\SYSTEM\\CurrentControlSet\\") == expected
    assert canonical_key_path("hklm:/SYSTEM/x/../CurrentControlSet") == expected
    assert canonical_key_path("C:\\Windows") is None
    assert drive_path(expected) == "HKLM:\\SYSTEM\\CurrentControlSet"


def test_machine_environment_values_are_case_insensitive() -> None:
    registry = Registry.for_node(["kubelet"], {"Path": "C:\\Windows"}, {})
    environment = registry.key(MACHINE_ENVIRONMENT)
    assert environment is not None
    environment.set("HTTPS_PROXY", "http://p:1", "REG_SZ")
    assert environment.get("https_proxy") is not None
    assert registry.environment(MACHINE_ENVIRONMENT)["HTTPS_PROXY"] == "http://p:1"
    assert environment.delete("Https_Proxy") and not environment.delete("HTTPS_PROXY")
