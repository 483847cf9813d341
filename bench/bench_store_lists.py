"""The store's list of one node's pods (a kubelet's ``fieldSelector=spec.nodeName=…``) at fleet
sizes: through the ``spec.nodeName`` index, and by scanning every pod as before it. Each node runs
a DaemonSet's pod and a service's, as in the lab.

    python bench/bench_store_lists.py --nodes 100 300 1000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxyfleet.simulators.controlplane.resources import PODS
from proxyfleet.simulators.controlplane.selectors import field_selector
from proxyfleet.simulators.controlplane.store import Store


def store_with(nodes: int) -> Store:
    """A store with two pods bound to each of ``nodes`` nodes."""
    store = Store()
    for n in range(nodes):
        for namespace in ("openshift-dns", "workloads"):
            store.create(PODS, {"metadata": {"name": f"pod-{n}", "namespace": namespace, "labels": {"app": namespace}},
                                "spec": {"nodeName": f"node-{n}", "containers": [{"name": "c", "image": "i"}]},
                                "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}})
    return store


def per_list(store: Store, nodes: int, indexed: bool, seconds: float = 1.0) -> float:
    """Milliseconds per list of one node's pods."""
    lists, began = 0, time.perf_counter()
    while (spent := time.perf_counter() - began) < seconds:
        selector = field_selector(f"spec.nodeName=node-{lists % nodes}", "pods")
        found = store.list(PODS, None, selector, selector.equalities if indexed else None)
        assert len(found) == 2
        lists += 1
    return spent / lists * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, nargs="+", default=[100, 300, 1000])
    args = parser.parse_args()
    print("| nodes | pods | scan, ms per list | index, ms per list |")
    print("|---|---|---|---|")
    for nodes in args.nodes:
        store = store_with(nodes)
        scan, index = per_list(store, nodes, False), per_list(store, nodes, True)
        print(f"| {nodes:,} | {2 * nodes:,} | {scan:.2f} | {index:.3f} |")


if __name__ == "__main__":
    main()
