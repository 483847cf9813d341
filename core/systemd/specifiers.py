"""systemd's ``%`` specifiers in unit file settings (systemd.unit(5), "Specifiers", systemd 252).

A ``%`` followed by a letter or digit systemd does not know is an error (``EBADSLT``, "Invalid
slot") and the setting's word is ignored: a URL-encoded password in ``Environment=`` such as
``p%40ss`` is dropped, which is why the Machine Config Operator moved the proxy to an
``EnvironmentFile=`` (whose contents are not expanded). A known one is expanded — ``%C3%A9``
silently becomes ``/var/cache3/…``. ``%%`` is one ``%``; ``%`` before anything else, or at the
end, stays as it is.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# The errno text systemd logs for an unknown specifier.
UNKNOWN_SPECIFIER = "Invalid slot"


class SpecifierError(ValueError):
    """A ``%`` specifier systemd does not know (the word it is in is ignored)."""


@dataclass(frozen=True)
class SpecifierContext:
    """What a system unit's specifiers expand to on one node (defaults: an RHCOS-like worker
    running its services as root)."""

    unit: str  # the unit's full name, e.g. "kubelet.service"
    fragment_path: str = ""  # where its main file is (%y)
    hostname: str = "worker-0"
    machine_id: str = "0" * 32
    boot_id: str = "0" * 32
    kernel_release: str = "5.14.0-427.el9.x86_64"
    architecture: str = "x86-64"
    os_release: dict[str, str] = field(default_factory=lambda: {
        "ID": "rhcos", "VERSION_ID": "4.16", "VARIANT_ID": "coreos", "BUILD_ID": "", "IMAGE_ID": "",
        "IMAGE_VERSION": ""})
    pretty_hostname: str = ""

    def table(self) -> dict[str, str]:
        """Every specifier systemd 252 knows in a system unit, expanded."""
        prefix, _, instance = self.unit.rpartition(".")[0].partition("@")
        name = self.unit.rpartition(".")[0]
        last = prefix.rpartition("-")[2]
        fragment_dir = self.fragment_path.rpartition("/")[0]
        return {
            "a": self.architecture, "A": self.os_release.get("IMAGE_VERSION", ""),
            "b": self.boot_id, "B": self.os_release.get("BUILD_ID", ""),
            "C": "/var/cache", "d": "", "E": "/etc", "f": "/" + (instance or name),
            "g": "root", "G": "0", "h": "/root", "H": self.hostname,
            "i": instance, "I": instance, "j": last, "J": last,
            "l": self.hostname.partition(".")[0], "L": "/var/log", "m": self.machine_id,
            "M": self.os_release.get("IMAGE_ID", ""), "n": self.unit, "N": name,
            "o": self.os_release.get("ID", ""), "p": prefix, "P": prefix,
            "q": self.pretty_hostname, "s": "/bin/sh", "S": "/var/lib", "t": "/run", "T": "/tmp",
            "u": "root", "U": "0", "v": self.kernel_release, "V": "/var/tmp",
            "w": self.os_release.get("VERSION_ID", ""), "W": self.os_release.get("VARIANT_ID", ""),
            "y": self.fragment_path, "Y": fragment_dir,
        }


def expand(text: str, context: SpecifierContext) -> str:
    """``text`` with its specifiers expanded (systemd's ``specifier_printf``); ``SpecifierError``
    for one systemd does not know."""
    if "%" not in text:
        return text
    table = context.table()
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c != "%":
            out.append(c)
            i += 1
            continue
        if i + 1 == n:  # a stray % at the end stays
            out.append("%")
            break
        following = text[i + 1]
        if following == "%":
            out.append("%")
        elif following in table:
            out.append(table[following])
        elif following.isascii() and following.isalnum():
            raise SpecifierError(UNKNOWN_SPECIFIER)
        else:
            out.append("%" + following)
        i += 2
    return "".join(out)
