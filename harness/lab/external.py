"""An external reconciler (``--reconciler-command``) run as the lab's operator: started after the
fleet, stopped with SIGTERM (then SIGKILL) before it, its output in ``reconciler.log`` (0600).
``PROXYFLEET_LAG_FILE`` names ``reconciler-lag.jsonl`` beside it: ``proxyfleet reconcile`` writes
its event loop's stalls there (another program ignores it), and the report shows them per step.

``env="olm"`` runs it the way Operator Lifecycle Manager runs the Windows Machine Config
Operator: ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``NO_PROXY`` from ``Proxy/cluster`` status in its
environment (empty values dropped), and a restart whenever they change — the real operator never
watches the Proxy itself.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from proxyfleet.core.contract import PROXY_VARIABLES
from proxyfleet.core.lifecycle import die_with_parent, terminate_group
from proxyfleet.core.looplag import LAG_FILE_ENV
from proxyfleet.core.secretfiles import open_private_append

log = logging.getLogger(__name__)
STOP_GRACE = 10.0
ENV_MODES = ("none", "olm")
_STATUS_FIELDS = {"HTTP_PROXY": "httpProxy", "HTTPS_PROXY": "httpsProxy", "NO_PROXY": "noProxy"}


class ExternalReconcilerError(RuntimeError):
    reason = "ExternalReconcilerError"


def command_line(template: str, values: Mapping[str, object]) -> list[str]:
    """The argv of ``template`` with its ``{placeholders}`` filled in, each value shell-quoted so
    a path with spaces or quotes stays one argument."""
    try:
        return shlex.split(template.format(**{k: shlex.quote(str(v)) for k, v in values.items()}))
    except (KeyError, IndexError, ValueError) as exc:
        raise ExternalReconcilerError(f"the reconciler command {template!r} is malformed: {exc}") from None


def olm_environment(proxy_status: Mapping[str, Any]) -> dict[str, str]:
    """What OLM injects into the operator's pod: the proxy variables of Proxy status, without
    the empty ones."""
    values = {name: str(proxy_status.get(field) or "") for name, field in _STATUS_FIELDS.items()}
    return {name: value for name, value in values.items() if value}


class ExternalReconciler:
    """One external reconciler process (restarted with a new environment under ``env="olm"``)."""

    def __init__(self, argv: list[str], log_path: Path, env_mode: str = "none") -> None:
        if env_mode not in ENV_MODES:
            raise ExternalReconcilerError(f"unknown reconciler environment {env_mode!r}; choose one of "
                                          + ", ".join(ENV_MODES))
        self.argv = argv
        self.log_path = log_path
        self.lag_path = log_path.with_name("reconciler-lag.jsonl")
        self.env_mode = env_mode
        self.process: asyncio.subprocess.Process | None = None
        self.injected: dict[str, str] = {}
        self.starts = 0

    def _environment(self) -> dict[str, str]:
        environment = {k: v for k, v in os.environ.items() if k.upper() not in PROXY_VARIABLES} \
            if self.env_mode == "olm" else dict(os.environ)
        return {**environment, **self.injected, LAG_FILE_ENV: str(self.lag_path)}

    async def start(self) -> None:
        output = open_private_append(self.log_path)
        try:
            self.process = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.DEVNULL, stdout=output, stderr=output,
                env=self._environment(), start_new_session=True, preexec_fn=die_with_parent)
        except OSError as exc:
            raise ExternalReconcilerError(f"cannot start the reconciler {self.argv[0]!r}: {exc}") from None
        finally:
            output.close()
        self.starts += 1

    async def stop(self) -> None:
        """SIGTERM the process group; SIGKILL it if it has not exited after ``STOP_GRACE``."""
        await self._end(grace=STOP_GRACE)

    async def kill(self) -> None:
        """SIGKILL the process group: no chance to clean up, as in a crash or an OOM kill."""
        await self._end(grace=None)

    async def _end(self, grace: float | None) -> None:
        process, self.process = self.process, None
        if process is None or process.returncode is not None:
            return
        await terminate_group(process, grace)

    async def proxy_status_changed(self, status: Mapping[str, Any]) -> bool:
        """Under OLM, restart with the new variables when they differ; returns whether it did."""
        if self.env_mode != "olm":
            return False
        wanted = olm_environment(status)
        if wanted == self.injected and self.process is not None:
            return False
        self.injected = wanted
        log.info("restarting the external reconciler with the cluster's proxy variables (as OLM does)")
        await self.stop()
        await self.start()
        return True
