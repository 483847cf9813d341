"""crictl's command line on any node kind: help and version, the runtime down, ``--`` ending its
options, image references refused as containerd refuses them, pulls reported and listed."""

from __future__ import annotations

from collections.abc import Mapping

from proxyfleet.core.imagereference import ImageReference
from proxyfleet.simulators.egress.crictl import ContainerRuntime, crictl
from proxyfleet.simulators.egress.imagepull import PullFailed


def _runtime(running: bool = True) -> tuple[ContainerRuntime, list[tuple[dict[str, str], str]]]:
    pulled: list[tuple[dict[str, str], str]] = []

    async def pull(environment: Mapping[str, str], image: ImageReference) -> str:
        pulled.append((dict(environment), str(image)))
        if image.host == "nothere.example.org":
            raise PullFailed("Unknown", 'failed to resolve reference "x": dial tcp: lookup nothere.example.org: '
                                        "no such host")
        return "sha256:" + "ab" * 32

    runtime = ContainerRuntime("cri-o", "1.29.1", "unix:///var/run/crio/crio.sock",
                               "dial unix /var/run/crio/crio.sock: connect: no such file or directory",
                               {"HTTPS_PROXY": "http://p:3128"} if running else None, {}, pull,
                               "2026-11-27T12:00:00Z")
    return runtime, pulled


async def test_version_and_help_need_no_runtime() -> None:
    runtime, _ = _runtime(running=False)
    version = await crictl(["version"], runtime)
    assert version[2] == 0 and "RuntimeName:  cri-o\nRuntimeVersion:  1.29.1\n" in version[0]
    assert (await crictl(["--help"], runtime))[0].startswith("NAME:\n   crictl")


async def test_a_runtime_that_does_not_run_is_a_dial_error() -> None:
    runtime, pulled = _runtime(running=False)
    stdout, stderr, code = await crictl(["pull", "quay.io/a:1"], runtime)
    assert (stdout, code, pulled) == ("", 1, [])
    assert stderr == ('time="2026-11-27T12:00:00Z" level=fatal msg="validate service connection: validate CRI v1 '
                      'image API for endpoint \\"unix:///var/run/crio/crio.sock\\": rpc error: code = Unavailable '
                      'desc = connection error: desc = \\"transport: Error while dialing: dial unix '
                      '/var/run/crio/crio.sock: connect: no such file or directory\\""\n')


async def test_pull_uses_the_runtimes_environment_and_lists_the_image() -> None:
    runtime, pulled = _runtime()
    stdout, _, code = await crictl(["-r", "unix:///var/run/crio/crio.sock", "pull", "quay.io/a:1"], runtime)
    assert (code, stdout) == (0, f"Image is up to date for sha256:{'ab' * 32}\n")
    assert pulled == [({"HTTPS_PROXY": "http://p:3128"}, "quay.io/a:1")]
    listing = (await crictl(["images"], runtime))[0].splitlines()
    assert listing[1].split() == ["quay.io/a", "1", "ababababababa"]  # the id's first 13 digits


async def test_operands_after_double_dash_and_refusals() -> None:
    runtime, _ = _runtime()
    operand = await crictl(["pull", "--", "--creds"], runtime)
    assert "parse reference '--creds': invalid reference format" in operand[1]
    assert "image name cannot be empty" in (await crictl(["pull"], runtime))[1]
    assert (await crictl(["frob"], runtime))[1:] == ("No help topic for 'frob'\n", 3)
    failed = await crictl(["pull", "nothere.example.org/x:1"], runtime)
    assert failed[2] == 1 and 'failed to pull and unpack image \\"nothere.example.org/x:1\\"' in failed[1]
    assert "lookup nothere.example.org: no such host" in failed[1] and runtime.images == {}
