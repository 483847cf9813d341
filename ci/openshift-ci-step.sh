#!/usr/bin/env bash
# An OpenShift CI step-registry style command: judge the reconciler binary built into this step's
# image against the embedded lab. Reports go to ${ARTIFACT_DIR} (JUnit files named junit_*.xml are
# picked up by Prow/Spyglass).
#
#   RECONCILER_BINARY          the reconciler to judge (default: the reference reconciler)
#   RECONCILER_REBOOT_TIMEOUT  seconds it waits for a rebooting node before reporting it (default
#                              600, the real operator's): a stuck node's report is waited for so long
#   RECONCILER_RESYNC_PERIOD   seconds between its looks at every node (default 60): a node changed
#                              out of band (drift) is waited for so long more
#   PROXYFLEET_NODES           Windows nodes per scenario lab (default 10)
# Any arguments are passed on to proxyfleet conformance (e.g. --workflow faults).
set -euo pipefail

artifacts="${ARTIFACT_DIR:-/tmp/artifacts}"
mkdir -p "$artifacts"
args=(--nodes "${PROXYFLEET_NODES:-10}"
      --junit "$artifacts/junit_proxyfleet.xml" --html "$artifacts/proxyfleet.html"
      --json "$artifacts/proxyfleet.json" --flows "$artifacts/proxyfleet.mitm"
      --reconciler-reboot-timeout "${RECONCILER_REBOOT_TIMEOUT:-600}"
      --reconciler-resync-period "${RECONCILER_RESYNC_PERIOD:-60}")
if [[ -n "${RECONCILER_BINARY:-}" ]]; then
    args+=(--reconciler-command "$RECONCILER_BINARY --kubeconfig {kubeconfig} --ssh-port {ssh_port} --max-unavailable {max_unavailable}")
fi
exec proxyfleet conformance "${args[@]}" "$@"
