"""A vendor's proxy as the user gave it: paths to its files, not their contents. Between
``proxyfleet conformance`` and its scenario workers it travels as JSON naming files (the auth
file, the CA), so no secret is copied anywhere; ``spec()`` reads and checks them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from proxyfleet.core.certificates import CertificateFormatError, certificates_in_bundle
from proxyfleet.harness.lab.accesslogs import AUTO, LogFormatError, check_format
from proxyfleet.harness.lab.vendor import VendorProxyError, VendorProxySpec, parse_listen


@dataclass(frozen=True)
class ProxyOptions:
    """The options as given (paths, not contents)."""

    command: str | None = None
    url: str | None = None
    image: str | None = None
    listen: str | None = None
    ca_file: Path | None = None
    auth_file: Path | None = None
    config: tuple[Path, ...] = field(default_factory=tuple)
    user: str | None = None
    access_log: str | None = None
    log_format: str = AUTO  # how the access log is read (``accesslogs``): a format's name or a regex
    own_etc_hosts: bool = False
    unbound_egress: bool = False
    tls_port: int | None = None
    tls_ca_file: Path | None = None

    @property
    def given(self) -> bool:
        return self.command is not None or self.url is not None or self.image is not None

    @property
    def serial(self) -> bool:
        """Whether labs must run one at a time: a fixed listening address (or one running proxy)
        cannot serve labs side by side."""
        return self.url is not None or self.listen is not None

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "url": self.url, "image": self.image, "listen": self.listen,
                "ca_file": str(self.ca_file) if self.ca_file else None,
                "auth_file": str(self.auth_file) if self.auth_file else None,
                "config": [str(p) for p in self.config], "user": self.user, "access_log": self.access_log,
                "log_format": self.log_format,
                "own_etc_hosts": self.own_etc_hosts, "unbound_egress": self.unbound_egress,
                "tls_port": self.tls_port,
                "tls_ca_file": str(self.tls_ca_file) if self.tls_ca_file else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProxyOptions:
        return cls(command=data.get("command"), url=data.get("url"), image=data.get("image"), listen=data.get("listen"),
                   ca_file=Path(data["ca_file"]) if data.get("ca_file") else None,
                   auth_file=Path(data["auth_file"]) if data.get("auth_file") else None,
                   config=tuple(Path(p) for p in data.get("config") or ()), user=data.get("user"),
                   access_log=data.get("access_log"), log_format=str(data.get("log_format") or AUTO),
                   own_etc_hosts=bool(data.get("own_etc_hosts")),
                   unbound_egress=bool(data.get("unbound_egress")),
                   tls_port=data.get("tls_port"),
                   tls_ca_file=Path(data["tls_ca_file"]) if data.get("tls_ca_file") else None)

    def spec(self) -> VendorProxySpec:
        """Read the files and check every value; raises ``VendorProxyError`` with what is wrong."""
        if self.url is not None and (self.command is not None or self.image is not None):
            raise VendorProxyError("--proxy-url excludes --proxy-command and --proxy-image: start a proxy, or use one")
        if self.url is not None and "@" in self.url:
            raise VendorProxyError("--proxy-url must not carry credentials (they would show in process lists): "
                                   "put user:password in a file and pass --proxy-auth-file")
        try:
            check_format(self.log_format)
        except LogFormatError as exc:
            raise VendorProxyError(f"--proxy-log-format: {exc}") from None
        return VendorProxySpec(command=self.command, url=self.url,
                               listen=parse_listen(self.listen) if self.listen else None,
                               config_files=self.config, ca_pem=_ca("--proxy-ca", self.ca_file), auth=self._auth(),
                               user=self.user, access_log=self.access_log, log_format=self.log_format,
                               image=self.image,
                               own_etc_hosts=self.own_etc_hosts, unbound_egress=self.unbound_egress,
                               tls_port=self.tls_port,
                               tls_ca_pem=_ca("--proxy-tls-ca", self.tls_ca_file))

    def _auth(self) -> str | None:
        if self.auth_file is None:
            return None
        try:
            text = self.auth_file.read_text().strip()
        except OSError as exc:
            raise VendorProxyError(f"--proxy-auth-file {self.auth_file}: {exc.strerror or exc}") from None
        user, colon, _ = text.partition(":")
        if not colon or not user or "\n" in text:
            raise VendorProxyError(f"--proxy-auth-file {self.auth_file}: expected one line user:password")
        return text

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(self.to_json()))
        return path


def _ca(option: str, path: Path | None) -> bytes | None:
    """A PEM CA file's bytes, checked (None when not given)."""
    if path is None:
        return None
    try:
        pem = path.read_bytes()
        if not certificates_in_bundle(pem):
            raise VendorProxyError(f"{option} {path}: no PEM certificate in it")
    except OSError as exc:
        raise VendorProxyError(f"{option} {path}: {exc.strerror or exc}") from None
    except CertificateFormatError as exc:
        raise VendorProxyError(f"{option} {path}: {exc}") from None
    return pem
