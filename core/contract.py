"""Every name the node contract (DESIGN.md sections 1 and 2) and the cluster's objects share, defined once:
the reconciler, the simulated control plane, the lab and the judge all import them from here."""

from __future__ import annotations

# The machine variables a proxied Windows node carries (names as written; Windows compares
# them case-insensitively).
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")
# Both spellings of each, as a Linux service must hold them: Go reads either, libcurl reads a
# plain-HTTP proxy only as http_proxy.
PROXY_SPELLINGS = tuple(s for name in PROXY_VARIABLES for s in (name, name.lower()))
# The services whose egress the proxy settings govern; each reads its environment when it starts.
EGRESS_SERVICES = ("containerd", "kubelet", "kube-proxy", "hybrid-overlay-node", "windows_exporter",
                   "windows-instance-config-daemon")

# config.openshift.io/v1 Proxy, cluster-scoped, one object named "cluster".
CONFIG_GROUP = "config.openshift.io"
CONFIG_VERSION = "v1"
PROXIES = "proxies"
PROXY_NAME = "cluster"
PROXY = (CONFIG_GROUP, CONFIG_VERSION, PROXIES, PROXY_NAME)  # CustomObjectsApi arguments

# Where trusted CAs live and travel.
OPENSHIFT_CONFIG = "openshift-config"  # the user's trustedCA ConfigMap (spec.trustedCA.name)
OPENSHIFT_CONFIG_MANAGED = "openshift-config-managed"
TRUSTED_BUNDLE_NAME = "trusted-ca-bundle"  # the merged bundle, in OPENSHIFT_CONFIG_MANAGED
USER_CA_BUNDLE = "user-ca-bundle"  # what the installer names additionalTrustBundle's ConfigMap
BUNDLE_KEY = "ca-bundle.crt"
INJECT_LABEL = "config.openshift.io/inject-trusted-cabundle"

# The Windows Machine Config Operator's namespace and what it reads there.
OPERATOR_NAMESPACE = "openshift-windows-machine-config-operator"
INSTANCES = "windows-instances"  # BYOH instances: address -> "username=<user>"
# Linux nodes the reference reconciler drives over SSH, in the same format (proxyfleet's own: the
# MCO runs on the node and needs no such list).
LINUX_INSTANCES = "linux-instances"
KEY_SECRET = "cloud-private-key"
KEY_FIELD = "private-key.pem"
TRUSTED_CA = "trusted-ca"  # the operator's injected copy of the merged bundle
# How long WMCO waits for an instance to come back from its reboot before it gives up on it: its
# SSH client's re-initialisation polls every minute for ``retry.Timeout`` = 10 minutes
# (pkg/windows/connectivity.go init: wait.PollImmediate(time.Minute, retry.Timeout, ...);
# pkg/retry/retry.go). A judge waiting for a stuck node to be reported waits at least this long.
OPERATOR_REBOOT_TIMEOUT = 600.0
# How often a reconciler looks at every node again (its resync: what repairs a node changed out of
# band) unless it declares otherwise: ``proxyfleet reconcile``'s default. A step that drifts a node
# waits this long more for the repair to begin; the real operator's periodic resync is controller-
# runtime's, hours — an external reconciler declares its own.
RECONCILER_RESYNC_PERIOD = 60.0

# What a conformance run against an existing cluster writes there itself: the company CA it
# publishes with its proxy (in OPENSHIFT_CONFIG). Its saved snapshot may delete nothing else.
RUN_CA = "proxyfleet-run-ca"

# What the reference reconciler writes on each Node (``kubectl get nodes -L proxyfleet.io/proxy-state``).
ANNOTATION_PREFIX = "proxyfleet.io/"
STATE_LABEL = ANNOTATION_PREFIX + "proxy-state"
MESSAGE = ANNOTATION_PREFIX + "message"
APPLIED = ANNOTATION_PREFIX + "applied"  # the rollout revision verified on the node (core.rollout)
