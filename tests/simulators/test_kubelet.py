"""What the simulated kubelet counts as a status change worth posting (pure; no lab)."""

from __future__ import annotations

from proxyfleet.simulators.kubelet import same_status


def test_only_a_changed_status_is_a_change() -> None:
    """Heartbeat and transition times alone are not worth a post (each is a Node event to every
    watcher); a condition the lifecycle controller changed, or a new boot, is."""
    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status"}
    wanted = {"addresses": [{"type": "InternalIP", "address": "127.10.0.1"}], "nodeInfo": {"bootID": "a"},
              "conditions": [{**ready, "lastHeartbeatTime": "2026-11-26T07:00:10Z"}]}
    shown = {**wanted, "conditions": [{**ready, "lastHeartbeatTime": "2026-11-26T07:00:00Z"}]}
    assert same_status(shown, wanted)
    unknown = {**ready, "status": "Unknown", "reason": "NodeStatusUnknown"}
    assert not same_status({**wanted, "conditions": [unknown]}, wanted)
    assert not same_status({**shown, "nodeInfo": {"bootID": "b"}}, wanted)
