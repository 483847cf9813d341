"""Test images built from Debian packages (no image registry is reachable): ``debootstrap`` a
minimal bookworm with the packages into a directory, ``docker import`` it, cached by a tag that
names the packages. Concurrent test workers build it once (a file lock)."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from proxyfleet.harness.lab.vendorcontainer import engine_available, image_present

MIRROR = "http://deb.debian.org/debian"
SQUID_PACKAGES = ("squid-openssl",)
SQUID_IMAGE = "proxyfleet-test/squid:bookworm-squid-openssl"
# Apache httpd (examples/apache): about 40 s to build on two cores, 335 MB.
APACHE_PACKAGES = ("apache2",)
APACHE_IMAGE = "proxyfleet-test/apache:bookworm-apache2"


class ImageUnavailable(Exception):
    """Why the image cannot be had here (the tests that need it skip with this reason)."""


def debian_image(tag: str, packages: tuple[str, ...]) -> str:
    """``tag``, built first if the engine does not have it."""
    problem = engine_available()
    if problem is not None:
        raise ImageUnavailable(problem)
    if image_present(tag):
        return tag
    lock_path = Path(tempfile.gettempdir()) / ("proxyfleet-image-" + tag.replace("/", "_").replace(":", "_") + ".lock")
    with lock_path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another worker may be building it right now
        if image_present(tag):
            return tag
        if os.geteuid() != 0 or shutil.which("debootstrap") is None:
            raise ImageUnavailable(f"{tag} is not built and building it needs root and debootstrap")
        root = Path(tempfile.mkdtemp(prefix="proxyfleet-rootfs-"))
        try:
            built = subprocess.run(["debootstrap", "--variant=minbase", f"--include={','.join(packages)}", "bookworm",
                                    str(root / "fs"), MIRROR], capture_output=True, text=True, timeout=900)
            if built.returncode != 0:
                raise ImageUnavailable(f"debootstrap failed: {built.stdout[-1500:]}{built.stderr[-1500:]}")
            archive = subprocess.Popen(["tar", "-C", str(root / "fs"), "-c", "."], stdout=subprocess.PIPE)
            imported = subprocess.run(["docker", "import", "-", tag], stdin=archive.stdout, capture_output=True,
                                      text=True, timeout=600)
            archive.wait()
            if imported.returncode != 0:
                raise ImageUnavailable(f"docker import failed: {imported.stderr[-1500:]}")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return tag
