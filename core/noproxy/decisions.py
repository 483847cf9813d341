"""What a client decides for one URL: go direct, use a proxy, or fail — and why."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, Protocol

DecisionKind = Literal["proxy", "direct", "error"]
# Go's url.Parse: the authority runs to the first "/", "?" or "#", and the userinfo is everything
# in it before the *last* "@" — so a password may itself hold "@" (``user:s3cr@t@proxy``).
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)?(?P<userinfo>[^/?#]*)@")
# The same inside free text, where whitespace and a double quote also end a URL.
_TEXT_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s\"]*@")


def redact_url(url: str | None) -> str | None:
    """Hide the credentials of a proxy URL: ``http://user:pw@p:3128`` -> ``http://***:***@p:3128``."""
    if url is None:
        return None
    match = _USERINFO.match(url)
    if match is None:
        return url
    hidden = "***:***" if ":" in match.group("userinfo") else "***"
    return (match.group("scheme") or "") + hidden + "@" + url[match.end():]


def redact_text(text: str) -> str:
    """Redact every ``scheme://user:password@`` in free text (log lines, messages): what Go would
    read as userinfo, up to the last ``@`` of the authority. Userinfo may hold ``'``, ``$``, ``(``,
    ``)`` and ``@``; whitespace, ``"``, ``/``, ``?`` and ``#`` end the authority."""
    return _TEXT_USERINFO.sub(r"\1***:***@", text)


@dataclass(frozen=True)
class Decision:
    """One client's proxy decision for one URL."""

    url: str
    client: str
    decision: DecisionKind
    proxy: str | None
    reason: str
    variable: str | None = None  # the environment variable (or setting) that supplied the proxy

    def as_json(self) -> dict[str, str | None]:
        return {"url": self.url, "client": self.client, "decision": self.decision,
                "proxy": redact_url(self.proxy), "reason": redact_text(self.reason)}


class ClientRules(Protocol):
    """A client's reading of proxy settings."""

    name: str
    description: str

    def decide(self, env: Mapping[str, str], url: str) -> Decision:
        """Decide for ``url`` under the environment ``env`` (names as the OS reports them)."""
        ...
