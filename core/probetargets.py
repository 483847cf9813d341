"""What a node's traffic probe may be given: an http(s) URL written in RFC 3986's characters
without credentials, or an image reference containerd reads.

Checked where the user names one (``conformance --http-url``, ``repro --destination``) and again
before a probe sends it: the probe carries the value as data, and these rules make sure it is
also one plain word for every program on the way — no whitespace (Windows PowerShell 5.1 would
quote it), no ``"`` (5.1 passes it unescaped), no backslash or control character (Windows'
command-line splitting), no ``{}``/``[]`` outside an IPv6 host (curl's URL globbing), nothing
that starts with ``-`` (an option) — and fits a Windows command line once encoded.
"""

from __future__ import annotations

import re
import urllib.parse

from proxyfleet.core.imagereference import ImageReference, parse_image

# A URL this long still fits cmd.exe's 8,191 characters as a probe's -EncodedCommand (about
# 8/3 encoded characters each, plus the probe's own script).
MAX_URL = 2048
# RFC 3986's characters: unreserved, gen-delims, sub-delims, and % (percent-encoding)
_URL_CHARACTER = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]")
_IPV6_AUTHORITY = re.compile(r"\[[0-9A-Fa-f:.]+\](:[0-9]*)?")
_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# What parse_image accepts, as a whole: its own pattern's final "$" also matches before a newline.
_IMAGE_CHARACTERS = re.compile(r"[A-Za-z0-9\[][A-Za-z0-9._:/@\[\]-]*")


class ProbeTargetError(ValueError):
    """A URL or image reference a probe cannot carry; the message says why, without the option
    (the caller names it)."""


def check_url(text: str) -> str:
    """``text`` if it is an ``http://`` or ``https://`` URL a probe can carry; raises
    ``ProbeTargetError`` saying what is wrong (the first offending character by position)."""
    for position, character in enumerate(text):
        if not _URL_CHARACTER.fullmatch(character):
            raise ProbeTargetError(f"{character!r} (position {position + 1}) is not a URL character "
                                   "(RFC 3986: percent-encode it)")
    if _PERCENT.search(text):
        raise ProbeTargetError("a '%' must start a percent-encoding (%XX)")
    if len(text) > MAX_URL:
        raise ProbeTargetError(f"longer than {MAX_URL} characters")
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise ProbeTargetError(f"not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not text.lower().startswith(("http://", "https://")):
        raise ProbeTargetError("expected an http:// (or https://) URL")
    if "@" in parts.netloc:
        raise ProbeTargetError("a URL with credentials would be on curl.exe's command line; give one that needs none")
    if not parts.hostname:
        raise ProbeTargetError("expected an http:// (or https://) URL with a host")
    if port == 0:
        raise ProbeTargetError("the port is not a number from 1 to 65535")
    brackets = re.search(r"[\[\]]", text[len(parts.scheme) + 3 + len(parts.netloc):])
    if brackets or (re.search(r"[\[\]]", parts.netloc) and not _IPV6_AUTHORITY.fullmatch(parts.netloc)):
        raise ProbeTargetError("'[' and ']' only around an IPv6 address (curl would read them as a pattern)")
    return text


def check_image(text: str) -> ImageReference:
    """The reference ``text`` names, if a probe can carry it; raises ``ProbeTargetError`` in
    containerd's words otherwise."""
    try:
        image = parse_image(text)
    except ValueError as exc:
        raise ProbeTargetError(str(exc)) from None
    if not _IMAGE_CHARACTERS.fullmatch(text):
        raise ProbeTargetError(f"parse reference {text!r}: invalid reference format")
    return image
