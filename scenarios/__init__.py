"""proxyfleet's conformance scenarios: pytest tests that act only through the cluster API and
judge only by node state over SSH, proxy flows and origin logs (see ``proxyfleet.harness.conformance``)."""
