"""Simulated Linux nodes: what systemd, the trust store and the node's programs do with the files
a proxy reconciler writes (issue 34; the node itself is not built yet)."""
