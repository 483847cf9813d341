"""The control plane's per-event costs at fleet sizes, each a cost that once grew with the fleet
on every event and ran a 1,000-node lab's loop hot:

* a kubelet's list of its own pods (``fieldSelector=spec.nodeName=…``): through the store's
  ``spec.nodeName`` index, and by scanning every pod as before it;
* one pass of the simulated workload controllers (ReplicaSets, the DaemonSet, the scheduler, the
  disruption controller) once the workload is in place — what every pod, Node readiness or budget
  event costs the lab's loop.

Each node runs a DaemonSet's pod and a service's, as in the lab.

    python bench/bench_fleet_scaling.py --nodes 100 300 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.simulators.controlplane.resources import NODES, PODS
from proxyfleet.simulators.controlplane.selectors import field_selector
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


def milliseconds_each(work: Callable[[int], None], seconds: float = 2.0) -> float:
    """Milliseconds per call of ``work(i)``, i counting up, over ``seconds``."""
    calls, began = 0, time.perf_counter()
    while (spent := time.perf_counter() - began) < seconds:
        work(calls)
        calls += 1
    return spent / calls * 1000


def node_pods(store: Store, nodes: int, indexed: bool) -> Callable[[int], None]:
    def work(i: int) -> None:
        selector = field_selector(f"spec.nodeName=node-{i % nodes}", "pods")
        assert len(store.list(PODS, None, selector, selector.equalities if indexed else None)) == 2
    return work


def idle_pass(controllers: WorkloadControllers) -> Callable[[int], None]:
    writes = controllers.store.writes

    def work(i: int) -> None:
        controllers.reconcile()
        assert controllers.store.writes == writes, "the pass was not idle"
    return work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 300, 1000])
    args = parser.parse_args()
    print("| nodes | pods | a node's pods: scan, ms | a node's pods: index, ms | a workload pass, ms |")
    print("|---|---|---|---|---|")
    for nodes in args.nodes:
        controllers = settled_lab(nodes)
        store = controllers.store
        scan = milliseconds_each(node_pods(store, nodes, indexed=False))
        index = milliseconds_each(node_pods(store, nodes, indexed=True))
        workload = milliseconds_each(idle_pass(controllers))
        print(f"| {nodes:,} | {len(store.scan(PODS)):,} | {scan:.2f} | {index:.3f} | {workload:.2f} |")


if __name__ == "__main__":
    main()
