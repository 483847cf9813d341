"""The vendor proxies' example configurations proxyfleet ships (``examples/`` in the repository,
``proxyfleet/examples`` in the wheel), and how each is run as the lab's corporate proxy — what
``proxyfleet config init --proxy squid|httpd|trafficserver`` writes beside a run file.

Each entry is the example's own header (``examples/<dir>/<file>``) and the vendor matrix's tested
command line (``tests/harness/cli/test_vendor_matrix.py``), the plain (no password) configuration.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import proxyfleet.harness


@dataclass(frozen=True)
class VendorExample:
    """One vendor proxy as its shipped example runs it on the lab."""

    name: str  # as `config init --proxy` takes it
    directory: str  # under examples/
    package: str  # the Debian package that brings it
    program: str
    command: str  # --proxy-command; {program} stands for the program's path
    config: str  # --proxy-config, relative to the copied directory ("" for the directory itself)
    user: str  # its package's system user: --proxy-user, as root
    etc_hosts: bool = False  # resolves names only through /etc/hosts: --proxy-etc-hosts (root)
    note: str = ""

    def program_path(self) -> str:
        """The program on this machine, or where Debian's package puts it."""
        return installed_program(self.program) or f"/usr/sbin/{self.program}"

    def installed(self) -> bool:
        return Path(self.program_path()).exists()


def installed_program(program: str) -> str | None:
    """Where ``program`` is on this machine: on the PATH, or where Debian's packages put proxies
    (``/usr/sbin`` is not on a user's PATH); None if it is not installed."""
    return shutil.which(program) or next(
        (str(p) for p in (Path("/usr/sbin") / program, Path("/usr/bin") / program) if p.exists()), None)


EXAMPLES = {example.name: example for example in [
    VendorExample("squid", "squid", "squid-openssl", "squid",
                  "{program} -N -n {{instance}} -f {{config_dir}}/squid.conf", "squid.conf", "proxy",
                  note="squid-ssl-bump.conf intercepts TLS, squid-basic-auth.conf asks for a password: "
                       "see their headers"),
    VendorExample("httpd", "apache", "apache2", "apache2",
                  "{program} -DFOREGROUND -d {{config_dir}} -f {{config_dir}}/httpd.conf", "", "www-data",
                  etc_hosts=True, note="httpd-basic-auth.conf asks for a password: see its header"),
    VendorExample("trafficserver", "trafficserver", "trafficserver", "traffic_server",
                  "{program} --run-root={{config_dir}}/runroot.yaml", "", "trafficserver"),
]}


def examples_directory() -> Path:
    """Where the examples are: beside the ``harness`` package (the wheel's ``proxyfleet/examples``,
    the repository's ``examples/``)."""
    return Path(next(iter(proxyfleet.harness.__path__))).parent / "examples"


def example_files(example: VendorExample) -> list[Path]:
    """The example's files as shipped (what ``copy_example`` copies)."""
    source = examples_directory() / example.directory
    if not source.is_dir():
        raise FileNotFoundError(f"proxyfleet's {example.directory} example is not installed ({source})")
    return [item for item in sorted(source.iterdir()) if item.is_file()]


def copy_example(example: VendorExample, into: Path) -> list[Path]:
    """Copy the example's files into ``into`` (created; an existing file is not overwritten — the
    caller decides), returning what was written."""
    files = example_files(example)
    into.mkdir(parents=True, exist_ok=True)
    written = []
    for item in files:
        target = into / item.name
        with open(target, "xb") as handle:  # never over a file already there
            handle.write(item.read_bytes())
        os.chmod(target, 0o644)  # configuration, not secrets: the proxy's own user reads its copy
        written.append(target)
    return written
