"""Proxies' configuration directories: below a parent only we write (0711), each with its owner
recorded beside it where the proxy cannot write, and swept once that owner is provably gone."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path

import pytest

from proxyfleet.core.owners import current_owner
from proxyfleet.core.privatedirs import NotPrivateError
from proxyfleet.harness.lab import configdirs
from tests.support import dead_owner


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_directory_is_made_private_under_a_passable_parent_with_its_owner_recorded(tmp_path: Path) -> None:
    parent = tmp_path / "proxies"
    directory = configdirs.make(parent)
    assert directory.parent == parent and directory.name.startswith(configdirs.PREFIX)
    assert mode(parent) == 0o711 and mode(directory) == 0o700
    record = configdirs.record_path(directory)
    assert mode(record) == 0o600 and record.parent == parent  # beside it, not inside: the proxy owns the inside
    assert configdirs.recorded_owner(parent, directory.name) == current_owner()
    assert configdirs.remove(directory)
    assert list(parent.iterdir()) == []


def test_a_parent_others_can_write_is_refused(tmp_path: Path) -> None:
    parent = tmp_path / "proxies"
    parent.mkdir()
    parent.chmod(0o777)
    with pytest.raises(NotPrivateError):
        configdirs.make(parent)


def test_the_sweep_removes_only_directories_whose_owner_is_provably_gone(tmp_path: Path) -> None:
    parent = tmp_path / "proxies"
    killed = configdirs.make(parent)  # as if its proxyfleet had been SIGKILLed
    configdirs.record_path(killed).write_text(json.dumps(dead_owner().as_labels()))
    (killed / "passwd").write_text("vendor:$apr1$...")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep").write_text("not the proxy's")
    (killed / "link").symlink_to(outside)  # planted by the proxy: removed, not followed
    alive = configdirs.make(parent)  # ours: we are alive
    unrecorded = parent / (configdirs.PREFIX + "norecord")
    unrecorded.mkdir()
    elsewhere = configdirs.make(parent)  # another PID namespace's owner: nothing provable here
    theirs = dataclasses.replace(current_owner(), pid_namespace=current_owner().pid_namespace + 1, pid=1)
    configdirs.record_path(elsewhere).write_text(json.dumps(theirs.as_labels()))
    stale = parent / (configdirs.PREFIX + "gone" + configdirs.RECORD)  # a record whose directory went
    stale.write_text(json.dumps(dead_owner().as_labels()))
    assert configdirs.sweep(parent) == [killed]
    assert not killed.exists() and not configdirs.record_path(killed).exists() and not stale.exists()
    assert (outside / "keep").read_text() == "not the proxy's"
    assert alive.is_dir() and unrecorded.is_dir() and elsewhere.is_dir()
    assert configdirs.sweep(tmp_path / "never-made") == []


def test_a_record_the_proxy_could_forge_is_not_read_through_a_link(tmp_path: Path) -> None:
    parent = tmp_path / "proxies"
    directory = configdirs.make(parent)
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(dead_owner().as_labels()))
    record = configdirs.record_path(directory)
    os.unlink(record)
    record.symlink_to(forged)
    assert configdirs.recorded_owner(parent, directory.name) is None
    assert configdirs.sweep(parent) == [] and directory.is_dir()
