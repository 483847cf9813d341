"""What one command may cost the simulated node: every node of a fleet shares one event loop, so a
runaway command (a catastrophic regular expression, ``'a' * 200000000``, an endless loop) must be
stopped instead of freezing or exhausting the process. Real Windows would grind on; the
simulator stops the command with the error .NET raises when it gives up.

- strings up to ``MAX_STRING_CHARS`` characters, arrays up to ``MAX_ELEMENTS`` elements, checked
  *before* a multiplying operation allocates;
- a regular expression match, replace or split runs for at most ``REGEX_SECONDS``;
- a command runs for at most ``Budget.seconds`` (and ``MAX_STEPS`` statements), yielding to the
  event loop as it goes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from proxyfleet.simulators.windows.powershell.errors import CommandFailure, ErrorRecord, ScriptHalted

MAX_STRING_CHARS = 16 * 1024 * 1024
MAX_ELEMENTS = 1024 * 1024
REGEX_SECONDS = 1.0
COMMAND_SECONDS = 120.0
MAX_STEPS = 2_000_000


def out_of_memory() -> CommandFailure:
    """.NET's OutOfMemoryException, statement-terminating as in PowerShell."""
    return CommandFailure(ErrorRecord(
        message="Exception of type 'System.OutOfMemoryException' was thrown.",
        error_id="System.OutOfMemoryException", category="OperationStopped",
        exception="OutOfMemoryException"))


def check_string(length: int) -> None:
    if length > MAX_STRING_CHARS:
        raise out_of_memory()


def check_elements(count: int) -> None:
    if count > MAX_ELEMENTS:
        raise out_of_memory()


def regex_timeout() -> CommandFailure:
    """.NET's RegexMatchTimeoutException message."""
    return CommandFailure(ErrorRecord(
        message="The RegEx engine has timed out while trying to match a pattern to an input "
                "string. This can occur for many reasons, including very large inputs or "
                "excessive backtracking caused by nested quantifiers, back-references and other "
                "factors.", error_id="RegexMatchTimeoutException", category="OperationStopped",
        exception="RegexMatchTimeoutException"))


@dataclass
class Budget:
    """The time and statement allowance of one command."""

    seconds: float = COMMAND_SECONDS
    steps: int = MAX_STEPS
    started: float = field(default_factory=time.monotonic)
    used_steps: int = 0

    def restart(self) -> None:
        self.started = time.monotonic()
        self.used_steps = 0

    def step(self) -> None:
        """Count one statement; halt the script once the allowance is spent."""
        self.used_steps += 1
        if self.used_steps > self.steps:
            raise ScriptHalted(ErrorRecord(
                message=f"The script exceeded the simulated node's limit of {self.steps} statements.",
                error_id="StepLimitExceeded", category="LimitsExceeded", exception="RuntimeException"))
        if time.monotonic() - self.started > self.seconds:
            raise ScriptHalted(ErrorRecord(
                message=f"The script exceeded the simulated node's time limit of {self.seconds:g} seconds.",
                error_id="TimeLimitExceeded", category="LimitsExceeded", exception="RuntimeException"))
