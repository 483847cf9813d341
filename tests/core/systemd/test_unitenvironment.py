"""A unit's environment from its files, as systemd 252 composes it (pure: files as text)."""

from __future__ import annotations

import pytest

from proxyfleet.core.systemd.execenvironment import EnvironmentFileError, EnvironmentFileRef, Warnings
from proxyfleet.core.systemd.specifiers import SpecifierContext
from proxyfleet.core.systemd.unitenvironment import UnitSettings, start_environment, unit_settings

CONTEXT = SpecifierContext("kubelet.service", fragment_path="/usr/lib/systemd/system/kubelet.service",
                           hostname="worker-7")


def test_drop_ins_override_the_fragment_in_order_and_an_empty_setting_resets() -> None:
    warnings = Warnings()
    settings = unit_settings([
        ("/usr/lib/systemd/system/kubelet.service",
         "[Unit]\nEnvironment=NOT_A_SERVICE_KEY=1\n[Service]\nEnvironment=A=1 B=2\nEnvironmentFile=-/etc/k\n"),
        ("/etc/systemd/system/kubelet.service.d/10-a.conf",
         '[Service]\nEnvironment="B=two words" C=%H\nEnvironmentFile=\nEnvironmentFile=/etc/mco/%N.env\n'),
        ("/etc/systemd/system/kubelet.service.d/20-b.conf", "[Service]\nEnvironment=\nEnvironment=D=%%x\n"),
    ], CONTEXT, warnings)
    # Environment= composes over every file; an empty one clears what came before it
    assert settings == UnitSettings({"D": "%x"}, (EnvironmentFileRef("/etc/mco/kubelet.env", False),))
    kept = unit_settings([("/etc/systemd/system/kubelet.service.d/10-a.conf",
                           '[Service]\nEnvironment="B=two words" C=%H P=%40\n')], CONTEXT, warnings)
    assert kept.environment == {"B": "two words", "C": "worker-7"}  # %4 is no specifier: the word is dropped
    assert any("Failed to resolve specifiers in P=%40, ignoring" in line for line in warnings.lines)


def test_environment_files_go_over_the_settings_and_a_missing_required_one_fails_the_start() -> None:
    settings = UnitSettings({"A": "1", "B": "2"}, (EnvironmentFileRef("/etc/a", False),
                                                   EnvironmentFileRef("/etc/optional", True)))
    files = {"/etc/a": "B=from-file\nC='quoted value'\n"}
    assert start_environment(settings, {"PATH": "/usr/bin", "A": "manager"}, files.get, Warnings()) == {
        "PATH": "/usr/bin", "A": "1", "B": "from-file", "C": "quoted value"}
    with pytest.raises(EnvironmentFileError, match="Failed to load environment files"):
        start_environment(settings, {}, {}.get, Warnings())
