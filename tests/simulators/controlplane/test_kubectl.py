"""The embedded control plane driven by the real ``kubectl``."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path

import pytest

from proxyfleet.simulators.controlplane.cluster import ControlPlane
from tests.support import wait_until

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")


async def kubectl(plane: ControlPlane, *args: str, stdin: bytes | None = None,
                  env: dict[str, str] | None = None) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        "kubectl", *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": str(plane.kubeconfig_path), **(env or {})})
    out, err = await asyncio.wait_for(process.communicate(stdin), 60)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_get_describe_and_columns(control_plane: ControlPlane) -> None:
    code, out, err = await kubectl(control_plane, "get", "namespaces")
    assert code == 0, err
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    assert "openshift-windows-machine-config-operator" in out
    code, out, _ = await kubectl(control_plane, "get", "co")
    assert out.splitlines()[0].split()[:5] == ["NAME", "VERSION", "AVAILABLE", "PROGRESSING", "DEGRADED"]
    code, out, _ = await kubectl(control_plane, "get", "proxy", "cluster", "-o", "jsonpath={.spec.trustedCA.name}")
    assert code == 0
    code, out, _ = await kubectl(control_plane, "describe", "configmap", "cluster-config-v1", "-n", "kube-system")
    assert code == 0 and "install-config" in out and "Events:" in out


async def test_apply_patch_edit_delete(control_plane: ControlPlane, tmp_path: Path) -> None:
    manifest = tmp_path / "cm.yaml"
    manifest.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\n  namespace: default\n"
                        "data:\n  key: one\n")
    assert (await kubectl(control_plane, "apply", "-f", str(manifest)))[1].strip() == "configmap/demo created"
    manifest.write_text(manifest.read_text().replace("one", "two"))
    assert (await kubectl(control_plane, "apply", "-f", str(manifest)))[1].strip() == "configmap/demo configured"
    code, out, _ = await kubectl(control_plane, "patch", "configmap", "demo", "-n", "default", "--type=merge",
                                 "-p", '{"data":{"extra":"yes"}}')
    assert code == 0 and "patched" in out
    code, out, err = await kubectl(control_plane, "edit", "configmap", "demo", "-n", "default",
                                   env={"EDITOR": "sed -i s/two/three/", "KUBE_EDITOR": "sed -i s/two/three/"})
    assert code == 0, err
    code, out, _ = await kubectl(control_plane, "get", "configmap", "demo", "-n", "default",
                                 "-o", "jsonpath={.data.key},{.data.extra}")
    assert out == "three,yes"
    assert (await kubectl(control_plane, "delete", "configmap", "demo", "-n", "default"))[1].strip() == \
        'configmap "demo" deleted'
    code, _, err = await kubectl(control_plane, "get", "configmap", "demo", "-n", "default")
    assert code == 1 and 'configmaps "demo" not found' in err


async def test_strict_validation_of_openshift_types(control_plane: ControlPlane, tmp_path: Path) -> None:
    manifest = tmp_path / "proxy.yaml"
    manifest.write_text("apiVersion: config.openshift.io/v1\nkind: Proxy\nmetadata:\n  name: cluster\n"
                        "spec:\n  httpProxy: http://proxy.corp:3128\n  bogusField: 1\n")
    code, _, err = await kubectl(control_plane, "apply", "-f", str(manifest))
    assert code == 1 and 'unknown field "spec.bogusField"' in err


async def test_get_watch_streams_changes(control_plane: ControlPlane) -> None:
    await kubectl(control_plane, "create", "configmap", "before", "-n", "default")
    process = await asyncio.create_subprocess_exec(
        "kubectl", "get", "configmaps", "-n", "default", "-w", "--output-watch-events",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "KUBECONFIG": str(control_plane.kubeconfig_path)})
    assert process.stdout is not None
    lines: list[str] = []

    async def reader() -> None:
        assert process.stdout is not None
        while line := await process.stdout.readline():
            lines.append(line.decode())

    task = asyncio.create_task(reader())
    try:
        await wait_until(lambda: any("before" in line for line in lines), what="kubectl's first rows")
        await kubectl(control_plane, "create", "configmap", "watched", "-n", "default")
        await kubectl(control_plane, "delete", "configmap", "watched", "-n", "default")
        await wait_until(lambda: any(line.startswith("DELETED") for line in lines), what="the DELETED event")
    finally:
        process.terminate()
        await process.wait()
        task.cancel()
    events = [line.split()[:2] for line in lines if line.startswith(("ADDED", "DELETED"))]
    assert ["ADDED", "watched"] in events and ["DELETED", "watched"] in events
