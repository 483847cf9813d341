"""The judge's traffic probes in the lab carry an id of their own, so that each request an origin
logs is tied to exactly one probe (one node, one step, one destination) — whichever proxy carried
it, and however many nodes pulled the same image through it at once.

An image is pulled by a tag that is the id (``quay.io/openshift/windows-test:pf-0123456789ab``:
the registry serves a probe tag as the repository's first image); a URL is fetched with the id in
its query (``http://ctldl.windowsupdate.com/?proxyfleet-probe=pf-0123456789ab``: origins answer
any query). The origin's access log keeps the path and query, where ``probe_in`` finds it.
"""

from __future__ import annotations

import re
import secrets
from urllib.parse import urlsplit, urlunsplit

from proxyfleet.core.imagereference import parse_image

PROBE_ID = re.compile(r"pf-[0-9a-f]{12}")
QUERY_KEY = "proxyfleet-probe"


def new_probe_id() -> str:
    return f"pf-{secrets.token_hex(6)}"


def is_probe_tag(reference: str) -> bool:
    return PROBE_ID.fullmatch(reference) is not None


def tagged_image(image: str, probe_id: str) -> str:
    """``image`` pulled by the probe's tag (its own tag or digest left out)."""
    reference = parse_image(image)
    return f"{reference.host}/{reference.repository}:{probe_id}"


def tagged_url(url: str, probe_id: str) -> str:
    """``url`` with the probe's id added to its query."""
    parts = urlsplit(url)
    query = f"{parts.query}&" if parts.query else ""
    return urlunsplit(parts._replace(query=f"{query}{QUERY_KEY}={probe_id}"))


def probe_in(path: str | None) -> str | None:
    """The probe id a request's path and query carry (None: not a probe's)."""
    found = PROBE_ID.search(path or "")
    return found.group() if found else None
