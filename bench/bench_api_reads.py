"""API server read benchmark: what the embedded control plane spends per read and per watch event.

The control plane runs in this process, seeded with N Nodes, a few pods on each and a
``trusted-ca``-sized ConfigMap (the cluster's bundle of ~150 certificates); a second process runs
the official ``kubernetes`` client against it over real HTTPS, as a reconciler and a judge do:
GETs of the bundle's ConfigMap and of Nodes, each node's pods listed by field selector, every Node
listed (the client's responses read but not decoded: only the server is measured), and W watches
on Nodes over HTTP while this process updates Node statuses. Reported: the server's CPU per request
of each kind and per delivered watch event (this process's CPU only; the client's is its own).

    python bench/bench_api_reads.py --nodes 100 --requests 600 --watchers 10 --updates 300
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import certifi
import trustme

from proxyfleet.simulators.controlplane.cluster import ControlPlane, ControlPlaneSettings
from proxyfleet.simulators.controlplane.resources import CONFIGMAPS, NODES, PODS

READS = ("bundle_configmap", "node", "pods_of_a_node", "all_nodes")
CLIENT = r"""
import json, sys, threading
from kubernetes import client, config, watch
kubeconfig, phase = sys.argv[1], sys.argv[2]
count, nodes, watchers = (int(a) for a in sys.argv[3:6])
api = config.new_client_from_config(config_file=kubeconfig)
core = client.CoreV1Api(api)
READS = {
    "bundle_configmap": lambda i: core.read_namespaced_config_map("trusted-ca", "openshift-config-managed",
                                                                  _preload_content=False),
    "node": lambda i: core.read_node(f"node-{i % nodes}", _preload_content=False),
    "pods_of_a_node": lambda i: core.list_pod_for_all_namespaces(field_selector=f"spec.nodeName=node-{i % nodes}",
                                                                 _preload_content=False),
    "all_nodes": lambda i: core.list_node(_preload_content=False),
}
if phase in READS:
    for i in range(count):
        READS[phase](i).read()
    print(json.dumps({"done": count}), flush=True)
else:
    got = [0] * watchers
    ready = threading.Barrier(watchers + 1)
    def follow(k):
        w = watch.Watch()
        rv = core.list_node().metadata.resource_version
        ready.wait()
        for event in w.stream(core.list_node, resource_version=rv, timeout_seconds=300):
            got[k] += 1
            if got[k] >= count:
                w.stop()
    threads = [threading.Thread(target=follow, args=(k,)) for k in range(watchers)]
    for t in threads: t.start()
    ready.wait()
    print(json.dumps({"ready": True}), flush=True)
    for t in threads: t.join()
    print(json.dumps({"events": sum(got)}), flush=True)
"""


def _seed(plane: ControlPlane, nodes: int) -> None:
    store = plane.store
    bundle = Path(certifi.where()).read_text()
    store.create(CONFIGMAPS, {"metadata": {"name": "trusted-ca", "namespace": "openshift-config-managed"},
                              "data": {"ca-bundle.crt": bundle}})
    for n in range(nodes):
        store.create(NODES, {"metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/os": "windows"},
                                          "annotations": {f"proxyfleet.io/a{k}": "x" * 40 for k in range(8)}},
                             "spec": {}, "status": {"conditions": [
                                 {"type": t, "status": "False", "reason": "KubeletHasNo" + t}
                                 for t in ("MemoryPressure", "DiskPressure", "PIDPressure")]
                                 + [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                                 "nodeInfo": {"machineID": f"node-{n}", "systemUUID": f"node-{n}", "bootID": "1",
                                              "kernelVersion": "10.0.20348.2227",
                                              "osImage": "Windows Server 2022 Datacenter",
                                              "containerRuntimeVersion": "containerd://1.7.13",
                                              "kubeletVersion": "v1.30.0", "kubeProxyVersion": "v1.30.0",
                                              "operatingSystem": "windows", "architecture": "amd64"}}})
        for p in range(4):
            store.create(PODS, {"metadata": {"name": f"pod-{n}-{p}", "namespace": "default"},
                                "spec": {"nodeName": f"node-{n}", "containers": [{"name": "c", "image": "x"}]},
                                "status": {"phase": "Running"}})


async def run(nodes: int, requests: int, watchers: int, updates: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as directory:
        ca = trustme.CA()
        plane = ControlPlane(ControlPlaneSettings(Path(directory) / "cluster", ca.cert_pem.bytes().decode()))
        await plane.start()
        try:
            _seed(plane, nodes)
            kubeconfig = str(plane.kubeconfig_path)
            reads: dict[str, float] = {}
            for kind in READS:
                count = max(requests // 10, 20) if kind == "all_nodes" else requests
                cpu = time.process_time()
                reader = await asyncio.create_subprocess_exec(
                    sys.executable, "-c", CLIENT, kubeconfig, kind, str(count), str(nodes), "0",
                    stdout=subprocess.PIPE)
                await reader.communicate()
                reads[kind] = round(1000 * (time.process_time() - cpu) / count, 3)
            follower = await asyncio.create_subprocess_exec(
                sys.executable, "-c", CLIENT, kubeconfig, "watch", str(updates), str(nodes), str(watchers),
                stdout=subprocess.PIPE)
            assert follower.stdout is not None
            await follower.stdout.readline()  # every watch is open
            cpu = time.process_time()
            for u in range(updates):
                name = f"node-{u % nodes}"
                node = plane.store.get(NODES, "", name)
                beat = f"2026-12-02T00:{u // 60 % 60:02d}:{u % 60:02d}Z"
                node["status"]["conditions"][-1]["lastHeartbeatTime"] = beat
                plane.store.update(NODES, "", name, node, subresource="status")
                if u % 20 == 0:
                    await asyncio.sleep(0)
            line = await follower.stdout.readline()
            watch_cpu = time.process_time() - cpu
            await follower.wait()
            events = json.loads(line)["events"]
        finally:
            await plane.stop()
    return {"nodes": nodes, "requests": requests, "server_cpu_ms_per_read": reads,
            "watchers": watchers, "updates": updates, "events_delivered": events,
            "server_cpu_ms_per_watch_event": round(1000 * watch_cpu / max(events, 1), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--requests", type=int, default=600)
    parser.add_argument("--watchers", type=int, default=10)
    parser.add_argument("--updates", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    for _ in range(options.rounds):
        print(json.dumps(asyncio.run(run(options.nodes, options.requests, options.watchers, options.updates))))


if __name__ == "__main__":
    main()
