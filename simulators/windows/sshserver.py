"""The node's OpenSSH server, as asyncssh policy objects: public-key auth only for the
configured user, PowerShell for exec and shell requests, SFTP over the ``C:`` drive."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import asyncssh

from proxyfleet.simulators import nodeaccess
from proxyfleet.simulators.windows.filesystem import DriveNotFound, WindowsFilesystem, WindowsPathError, normalize

if TYPE_CHECKING:
    from proxyfleet.simulators.windows.node import WindowsNode


class NodeSSHServer(nodeaccess.NodeSSHServer):
    """Deny by default: only the configured user with an authorized key gets in."""

    def __init__(self, node: WindowsNode) -> None:
        super().__init__(node)
        self.node = node

    def admitted(self, conn: asyncssh.SSHServerConnection) -> None:
        self.node.ssh_connections += 1

    def accepts(self, username: str, key: asyncssh.SSHKey) -> bool:
        # Windows user names are case-insensitive.
        accepted = (username.lower() == self.node.username.lower()
                    and key.public_data in self.node.authorized_key_data)
        if accepted:
            self.observer = key.public_data in self.node.observer_key_data
        return accepted


class NodeSFTPServer(asyncssh.SFTPServer):
    """SFTP with Windows paths: ``C:\\k\\x``, ``/C:/k/x`` and home-relative names all work."""

    def __init__(self, chan: asyncssh.SSHServerChannel[bytes], filesystem: WindowsFilesystem,
                 home: str) -> None:
        super().__init__(chan)
        self.filesystem = filesystem
        self.home = home

    def map_path(self, path: bytes) -> bytes:
        try:
            text = path.decode("utf-8")
            windows = normalize(text if text not in ("", ".") else self.home, self.home)
        except DriveNotFound as exc:
            raise asyncssh.SFTPNoSuchFile(str(exc)) from None
        except (WindowsPathError, UnicodeDecodeError) as exc:
            raise asyncssh.SFTPInvalidFilename(str(exc)) from None
        return str(self.filesystem.host_path(windows)).encode()

    def reverse_map_path(self, path: bytes) -> bytes:
        try:
            windows = self.filesystem.windows_path(Path(path.decode()))
        except ValueError:
            raise asyncssh.SFTPNoSuchFile("File not found") from None
        return ("/" + windows.replace("\\", "/")).encode()

    def symlink(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("Symbolic links are not supported on this node")

    def link(self, oldpath: bytes, newpath: bytes) -> None:
        raise asyncssh.SFTPOpUnsupported("Hard links are not supported on this node")
