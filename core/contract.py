"""The node contract of DESIGN.md §1, as the constants both the reconciler and the suites use."""

from __future__ import annotations

# The machine variables a proxied Windows node carries (names as written; Windows compares
# them case-insensitively).
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
# The services whose egress the proxy settings govern; each reads its environment when it starts.
EGRESS_SERVICES = ("containerd", "kubelet", "kube-proxy", "hybrid-overlay-node", "windows_exporter",
                   "windows-instance-config-daemon")
