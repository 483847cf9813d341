"""The common and combined log formats, as Apache httpd, nginx and Traffic Server write them for
a forward proxy, read as the lab's flow records (``flowrecords``).

``client ident user [time] "request line" status bytes`` (common; Apache's ``%h %l %u %t \\"%r\\"
%>s %O``, Traffic Server's ``common``), optionally followed by ``"referer" "user agent"``
(combined; nginx's default ``access_log``) and anything after those. A forward proxy's request
line is ``CONNECT quay.io:443 HTTP/1.1`` (Traffic Server: ``quay.io:443/``) or absolute-form ``GET
http://host/path HTTP/1.1``; an origin-form ``GET /path`` was a request to the server itself, not
through it, and is not a flow. The client must be an address: ``HostnameLookups Off`` (Apache's
default) and nginx's ``$remote_addr``. The user field is never read (Apache logs the name a
client sent even when the proxy refused it). The status is the one the client was answered; the
log names no reason, so ``error`` stays None.
"""

from __future__ import annotations

import re
from typing import Any

from proxyfleet.harness.lab import logtimes
from proxyfleet.harness.lab.flowrecords import LogLineError, flow_record

_QUOTED = r'"(?:[^"\\]|\\.)*"'  # Apache and nginx escape '"' and '\' inside quotes
_LINE = re.compile(rf'(?P<client>\S+) \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<request>(?:[^"\\]|\\.)*)" '
                   rf'(?P<status>\d{{3}}) (?:\d+|-)(?: {_QUOTED} {_QUOTED})?(?: .*)?')


class CombinedLogError(LogLineError):
    """A line that is not a forward proxy's line in the common or combined format."""


def parse_combined(line: str) -> dict[str, Any]:
    """One common- or combined-format line as a flow record; raises ``CombinedLogError`` on
    anything else."""
    found = _LINE.fullmatch(line.rstrip("\r\n"))
    if found is None:
        raise CombinedLogError(f"not a common or combined log line: {line[:120]!r}")
    words = found["request"].split(" ")
    if len(words) != 3 or not words[2].startswith("HTTP/"):
        raise CombinedLogError(f"not a request line: {found['request'][:120]!r}")
    method, target, _protocol = words
    if method == "CONNECT" and target.endswith("/"):
        target = target[:-1]  # Traffic Server's canonical URL of a CONNECT: "quay.io:443/"
    try:
        when = logtimes.clf(found["time"])
        return flow_record("combined", time=when, client=found["client"], method=method, target=target,
                           status=int(found["status"]))
    except ValueError as exc:  # LogLineError included
        raise CombinedLogError(str(exc)) from None
