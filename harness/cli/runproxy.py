"""The proxy a run against an existing cluster starts itself (``--proxy-listen ADDR:PORT``): the
lab's instrumented mitmdump, intercepting with a CA the run makes, so every flow is attributed to
the node it came from. It resolves upstream names through ``--proxy-hosts`` (or the system), leaves
from ``--proxy-egress`` (or wherever the system routes it) and trusts ``--proxy-upstream-ca`` (or
certifi's public roots) upstream. It runs on an event loop of its own, in a thread, for the whole
run: the scenarios run in this process's main thread."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import certifi
import trustme

from proxyfleet.simulators.proxy.runner import ProxyServer, ProxySettings

START_LIMIT = 90.0


@dataclass(frozen=True)
class RunProxySpec:
    """Where and how the run's proxy runs (checked before anything starts)."""

    address: str
    port: int
    hosts_file: Path | None = None
    egress_address: str | None = None
    upstream_ca: Path | None = None

    @property
    def url(self) -> str:
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"


def parse_listen(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` (``[v6]:PORT`` too); raises ValueError naming what is wrong."""
    address, sep, port = text.rpartition(":")
    address = address.strip("[]")
    if not sep or not address or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--proxy-listen {text!r}: expected ADDRESS:PORT (e.g. 10.0.0.9:3128)")
    return address, int(port)


class RunProxy:
    """``with RunProxy(spec, state_dir) as proxy:`` — started on entry, stopped on exit."""

    def __init__(self, spec: RunProxySpec, state_dir: Path) -> None:
        self.spec = spec
        self.ca = trustme.CA(organization_name="proxyfleet run proxy", key_type=trustme.KeyType.RSA)
        upstream = spec.upstream_ca.read_bytes() if spec.upstream_ca else Path(certifi.where()).read_bytes()
        self.server = ProxyServer(ProxySettings(
            state_dir=state_dir, network=None, upstream_ca_pem=upstream, listen_address=spec.address,
            egress_address=spec.egress_address, port=spec.port, mitm_ca=self.ca, hosts_file=spec.hosts_file))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="run-proxy", daemon=True)

    @property
    def ca_pem(self) -> bytes:
        return self.ca.cert_pem.bytes()

    @property
    def flow_log(self) -> Path:
        return self.server.flow_log_path

    def __enter__(self) -> RunProxy:
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.server.start(START_LIMIT), self._loop).result(START_LIMIT + 10)
        except BaseException:
            self._shut_down()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._shut_down()

    def _shut_down(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self.server.stop(), self._loop).result(30)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(30)
            self._loop.close()
