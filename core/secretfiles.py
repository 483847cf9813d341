"""Files that hold secrets (keys, tokens, proxy credentials): created readable by their owner
only, from the first byte — never written with the default mode and chmod-ed afterwards, which
leaves a window in which anyone on the machine can open them."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import BinaryIO

PRIVATE = 0o600


def write_private(path: Path, data: bytes | str) -> Path:
    """Replace ``path`` atomically with ``data``, mode 0600 from creation."""
    payload = data.encode() if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    # mkstemp creates the file O_EXCL with mode 0600; the rename keeps that mode even when an
    # older, wider file was at ``path``.
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(payload)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def open_private_append(path: Path) -> BinaryIO:
    """Open a log that may carry secrets for appending; a new file is created 0600."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE)
    return os.fdopen(descriptor, "ab")
