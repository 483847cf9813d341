"""``crictl`` as a node's administrator runs it against the node's container runtime: ``pull``,
``images``, ``version``, ``help``; its failures as logrus' fatal lines (``time=… level=fatal
msg="…"``), the runtime's own message quoted inside.

The node kind says what the runtime is (``ContainerRuntime``): its name and endpoint, whether it
runs, the environment its process started with (what its pulls' proxy rules read) and how it pulls.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

from proxyfleet.core.imagereference import ImageReference, parse_image
from proxyfleet.simulators.egress.imagepull import PullFailed

HELP = ("NAME:\n   crictl - client for CRI\n\nCOMMANDS:\n   pull     Pull an image from a registry\n"
        "   images   List images\n   version  Display runtime version information\n")
# crictl's global options that take a value (they come before the command)
VALUE_OPTIONS = ("-r", "--runtime-endpoint", "-i", "--image-endpoint", "-t", "--timeout")


@dataclass
class ContainerRuntime:
    """The runtime one ``crictl`` call reaches on a node."""

    name: str  # RuntimeName: "containerd", "cri-o"
    version: str  # RuntimeVersion
    endpoint: str  # "unix:///var/run/crio/crio.sock"
    dial_error: str  # gRPC's words when nothing listens on the endpoint
    environment: Mapping[str, str] | None  # its process's, or None when it does not run
    images: dict[str, str]  # reference -> image id, what it pulled
    pull: Callable[[Mapping[str, str], ImageReference], Awaitable[str]]  # raises PullFailed
    timestamp: str  # the node's clock, as logrus prints it


def fatal(runtime: ContainerRuntime, message: str) -> str:
    """One logrus fatal line: the message quoted, its backslashes and quotes escaped."""
    escaped = message.replace("\\", "\\\\").replace('"', '\\"')
    return f'time="{runtime.timestamp}" level=fatal msg="{escaped}"\n'


async def crictl(args: list[str], runtime: ContainerRuntime) -> tuple[str, str, int]:
    """``crictl ARGS``: (stdout, stderr, exit status)."""
    words = [a for a in args if a not in ("--debug", "-D")]
    while words and words[0] in VALUE_OPTIONS:
        words = words[2:]
    if not words or words[0] in ("-h", "--help", "help"):
        return HELP, "", 0
    command, rest = words[0], words[1:]
    if command == "version":
        return (f"Version:  0.1.0\nRuntimeName:  {runtime.name}\nRuntimeVersion:  {runtime.version}\n"
                "RuntimeApiVersion:  v1\n", "", 0)
    if runtime.environment is None:
        return "", fatal(runtime, f'validate service connection: validate CRI v1 image API for endpoint '
                                  f'"{runtime.endpoint}": rpc error: code = Unavailable desc = connection '
                                  f'error: desc = "transport: Error while dialing: {runtime.dial_error}"'), 1
    if command == "images":
        lines = ["IMAGE                                     TAG                 IMAGE ID"]
        for reference, image_id in sorted(runtime.images.items()):
            repository, _, tag = reference.rpartition(":")
            lines.append(f"{repository:41} {tag:19} {image_id[7:20]}")
        return "\n".join(lines) + "\n", "", 0
    if command != "pull":
        return "", f"No help topic for '{command}'\n", 3
    # Go's flag parsing (urfave/cli): "--" ends the options, every word after it is an operand.
    end = rest.index("--") if "--" in rest else len(rest)
    images = [a for a in rest[:end] if not a.startswith("-")] + rest[end + 1:]
    if len(images) != 1:
        return "", fatal(runtime, "image name cannot be empty"), 1
    try:
        image = parse_image(images[0])
    except ValueError as exc:
        return "", fatal(runtime, f"pulling image: rpc error: code = InvalidArgument desc = {exc}"), 1
    try:
        image_id = await runtime.pull(runtime.environment, image)
    except PullFailed as failure:
        return "", fatal(runtime, f'pulling image: rpc error: code = {failure.code} desc = failed to pull and '
                                  f'unpack image "{image}": {failure}'), 1
    runtime.images[str(image)] = image_id
    return f"Image is up to date for {image_id}\n", "", 0
