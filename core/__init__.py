"""What the reconciler and the lab share, and nothing else: the node contract's names, per-client
NO_PROXY rules and URL parsing, redaction, certificates, node access over SSH, kubeconfig
reading, secret files and process lifecycle. Depends on no other part of proxyfleet."""
