"""The embedded Kubernetes-compatible control plane with OpenShift's proxy semantics."""
