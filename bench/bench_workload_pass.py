"""One pass of the simulated workload controllers (ReplicaSets, the DaemonSet, the scheduler, the
disruption controller) over a lab's workload at fleet sizes: what every pod, Node readiness or
budget event costs the lab's loop once the workload is in place (nothing left to create or bind).

    python bench/bench_workload_pass.py --nodes 100 300 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.simulators.controlplane.resources import NODES, PODS
from proxyfleet.simulators.controlplane.store import Store
from proxyfleet.simulators.controlplane.workloads import WorkloadControllers, lab_workloads


def settled_lab(nodes: int) -> WorkloadControllers:
    """A store with ``nodes`` Ready Windows Nodes and the lab's workload created and bound."""
    store = Store()
    for n in range(nodes):
        store.create(NODES, {"metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/os": "windows"}},
                             "status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    for resource_type, obj in lab_workloads(nodes):
        store.create(resource_type, obj)
    controllers = WorkloadControllers(store)
    controllers.reconcile()  # creates and binds every pod
    controllers.reconcile()
    return controllers


def per_pass(controllers: WorkloadControllers, seconds: float = 2.0) -> float:
    """Milliseconds per pass with nothing to do."""
    writes, passes, began = controllers.store.writes, 0, time.perf_counter()
    while (spent := time.perf_counter() - began) < seconds:
        controllers.reconcile()
        passes += 1
    assert controllers.store.writes == writes, "the pass was not idle"
    return spent / passes * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 300, 1000])
    args = parser.parse_args()
    print("| nodes | pods | ms per pass |")
    print("|---|---|---|")
    for nodes in args.nodes:
        controllers = settled_lab(nodes)
        pods = len(controllers.store.scan(PODS))
        print(f"| {nodes:,} | {pods:,} | {per_pass(controllers):.2f} |")


if __name__ == "__main__":
    main()
