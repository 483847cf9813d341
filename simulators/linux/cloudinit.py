"""cloud-init on a simulated Linux node's first boot: the bootstrap data a CAPI machine is created
with (the KubeadmConfig's ``files`` as ``write_files``, its pre/post commands as ``runcmd``).

What is modelled, as cloud-init 23 does it on a CAPI image:

- ``#cloud-config`` user data (YAML); ``write_files`` entries with ``path``, ``content``,
  ``encoding`` (``b64``/``base64``, ``gzip``/``gz``, ``gz+b64``/``gzip+base64``, or plain text),
  ``permissions`` (an octal string, default ``0644``), ``owner`` (``root``/``root:root`` only) and
  ``append``; ``runcmd`` entries as a string (run by ``sh -c``) or a list (each word quoted);
- once per instance: a reboot does not run it again (``/var/lib/cloud/instance/boot-finished``);
- the order a real first boot gives: the enabled services (containerd, the kubelet) are already
  started when ``write_files`` lands — cloud-init's own units are not ordered before them — so a
  drop-in written by cloud-init reaches containerd only after ``systemctl daemon-reload`` and a
  restart, which is why CAPI templates run both in ``preKubeadmCommands``. ``runcmd`` output goes
  to ``/var/log/cloud-init-output.log``; a failing command is logged and the next one runs.

Anything else in the user data (other modules, ``defer``, another owner, MIME multipart,
Ignition) is refused, naming it — never skipped.
"""

from __future__ import annotations

import base64
import gzip
import shlex
from dataclasses import dataclass
from typing import Any

import yaml

HEADER = "#cloud-config"
BOOT_FINISHED = "/var/lib/cloud/instance/boot-finished"
OUTPUT_LOG = "/var/log/cloud-init-output.log"
_ENCODINGS = {"b64": ("b64",), "base64": ("b64",), "gzip": ("gz",), "gz": ("gz",),
              "gz+b64": ("b64", "gz"), "gzip+base64": ("b64", "gz"), "gz+base64": ("b64", "gz"),
              "gzip+b64": ("b64", "gz"), "text/plain": ()}
_FILE_KEYS = {"path", "content", "encoding", "permissions", "owner", "append"}


class UserDataError(ValueError):
    """Bootstrap data this simulator does not understand (or cloud-init would not)."""


@dataclass(frozen=True)
class WriteFile:
    """One ``write_files`` entry, decoded."""

    path: str
    content: bytes
    mode: int
    append: bool = False


@dataclass(frozen=True)
class CloudConfig:
    """What a node's first boot does with its user data."""

    write_files: tuple[WriteFile, ...] = ()
    runcmd: tuple[str, ...] = ()  # each a shell command


def _decode(entry: dict[str, Any], where: str) -> bytes:
    content = entry.get("content", "")
    if not isinstance(content, str):
        raise UserDataError(f"{where}: content must be a string")
    encoding = str(entry.get("encoding") or "text/plain").lower()
    if encoding not in _ENCODINGS:
        raise UserDataError(f"{where}: unknown encoding {encoding!r} (cloud-init knows: "
                            f"{', '.join(sorted(_ENCODINGS))})")
    data = content.encode()
    for step in _ENCODINGS[encoding]:
        try:
            data = base64.b64decode(data, validate=False) if step == "b64" else gzip.decompress(data)
        except (ValueError, OSError) as exc:
            raise UserDataError(f"{where}: content is not {encoding}: {exc}") from None
    return data


def _write_file(entry: Any, index: int) -> WriteFile:
    where = f"write_files[{index}]"
    if not isinstance(entry, dict):
        raise UserDataError(f"{where} must be a mapping")
    unknown = sorted(set(entry) - _FILE_KEYS)
    if unknown:
        raise UserDataError(f"{where}: {', '.join(unknown)} not modelled (it serves: {', '.join(sorted(_FILE_KEYS))})")
    path = entry.get("path")
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        raise UserDataError(f"{where}: path must be an absolute path")
    owner = str(entry.get("owner") or "root:root")
    if owner not in ("root", "root:root"):
        raise UserDataError(f"{where}: owner {owner!r} not modelled (every file is root's)")
    permissions = str(entry.get("permissions") or "0644")
    try:
        mode = int(permissions, 8)
    except ValueError:
        raise UserDataError(f"{where}: permissions {permissions!r} is not an octal mode") from None
    return WriteFile(path, _decode(entry, where), mode, bool(entry.get("append", False)))


def _command(entry: Any, index: int) -> str:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, list) and all(isinstance(word, str) for word in entry):
        return " ".join(shlex.quote(word) for word in entry)
    raise UserDataError(f"runcmd[{index}] must be a string or a list of strings")


def parse_user_data(text: str) -> CloudConfig:
    """The ``#cloud-config`` user data ``text``, or a clear error naming what is not modelled."""
    if not text.startswith(HEADER):
        raise UserDataError(f"user data must start with {HEADER!r} (MIME multipart, scripts and Ignition are not "
                            "modelled)")
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UserDataError(f"user data is not YAML: {exc}") from None
    if document is None:
        return CloudConfig()
    if not isinstance(document, dict):
        raise UserDataError("user data must be a mapping of cloud-init modules")
    unknown = sorted(set(document) - {"write_files", "runcmd"})
    if unknown:
        raise UserDataError(f"cloud-init module(s) {', '.join(unknown)} not modelled (it serves: write_files, "
                            "runcmd)")
    files = document.get("write_files") or []
    commands = document.get("runcmd") or []
    if not isinstance(files, list) or not isinstance(commands, list):
        raise UserDataError("write_files and runcmd must be lists")
    return CloudConfig(tuple(_write_file(e, i) for i, e in enumerate(files)),
                       tuple(_command(e, i) for i, e in enumerate(commands)))
