"""When each change of the cluster's proxy settings became visible through a watch: the Proxy's
published ``status`` and the operator's trusted CA bundle, as a reconciler watching them would see
them, from the shared informer (``proxyfleet.core.informer``).

A scenario's write returns before the change is published (the network operator copies the
Proxy's spec to its status, the bundle is injected) and delivered on watches; on a loaded machine
that takes seconds. A reconciler can apply only what it has seen, so "this reboot was already under
way when the change arrived" is judged against when the change was seen, not when it was written.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from proxyfleet.core.contract import CONFIG_GROUP, CONFIG_VERSION, OPERATOR_NAMESPACE, PROXIES, PROXY_NAME, TRUSTED_CA
from proxyfleet.core.informer import SYNCED, Informer

StateOf = Callable[[dict[str, Any] | None], str]  # what of an object counts as a change


def proxy_status(proxy: dict[str, Any] | None) -> str:
    """What a reconciler acts on in the Proxy: its published status (spec is not yet in force)."""
    status = (proxy or {}).get("status") or {}
    return json.dumps({k: status.get(k) for k in ("httpProxy", "httpsProxy", "noProxy")}, sort_keys=True)


def bundle_digest(configmap: dict[str, Any] | None) -> str:
    """The trusted CA ConfigMap's data (its labels are not a change of the bundle)."""
    if configmap is None:
        return "absent"
    return hashlib.sha256(json.dumps(configmap.get("data") or {}, sort_keys=True).encode()).hexdigest()


@dataclass
class ChangeSightings:
    """Times at which a watch delivered a new Proxy status or trusted CA bundle."""

    api: client.ApiClient
    namespace: str = OPERATOR_NAMESPACE
    times: list[dt.datetime] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._seen: dict[str, str] = {}  # object name -> its state as last delivered
        custom = client.CustomObjectsApi(self.api)
        core = client.CoreV1Api(self.api)
        self._proxies = Informer(self.api, custom.list_cluster_custom_object, CONFIG_GROUP, CONFIG_VERSION,
                                 PROXIES, name="proxy sightings", handler=self._follow(PROXY_NAME, proxy_status))
        self._bundles = Informer(self.api, core.list_namespaced_config_map, self.namespace, name="bundle sightings",
                                 handler=self._follow(TRUSTED_CA, bundle_digest))

    def start(self) -> None:
        """Start following (on the running event loop); the first listing is the baseline."""
        self._proxies.start()
        self._bundles.start()

    def stop(self) -> None:
        self._proxies.stop()
        self._bundles.stop()

    @property
    def synced(self) -> bool:
        """Whether both watches have their baseline."""
        return self._proxies.synced.is_set() and self._bundles.synced.is_set()

    def bundle_labels(self) -> dict[str, str]:
        """The trusted CA ConfigMap's labels as the watch has delivered them (for tests and logs)."""
        return dict(((self._bundles.get(TRUSTED_CA) or {}).get("metadata") or {}).get("labels") or {})

    def _follow(self, name: str, state_of: StateOf) -> Callable[[str, dict[str, Any]], None]:
        """An informer handler that notes when object ``name``'s state (``state_of``) changes."""
        return lambda event, obj: self._changed(name, state_of, event, obj)

    def _changed(self, name: str, state_of: StateOf, event: str, obj: dict[str, Any]) -> None:
        if event == SYNCED:
            found = next((i for i in obj["items"] if (i.get("metadata") or {}).get("name") == name), None)
        elif (obj.get("metadata") or {}).get("name") != name:
            return
        else:
            found = None if event == "DELETED" else obj
        state = state_of(found)
        previous = self._seen.get(name)
        self._seen[name] = state
        # A relist after an expired watch is not a change unless the state differs from before.
        if previous is not None and previous != state:
            self.times.append(dt.datetime.now(dt.UTC))

    def visible_at(self, issued: dt.datetime, returned: dt.datetime, next_issued: dt.datetime | None) -> dt.datetime:
        """When a change written between ``issued`` and ``returned`` was seen (``first_seen``)."""
        return first_seen(self.times, issued, returned, next_issued)


def first_seen(sightings: list[dt.datetime], issued: dt.datetime, returned: dt.datetime,
               next_issued: dt.datetime | None) -> dt.datetime:
    """When a change written between ``issued`` and ``returned`` was seen: its first sighting
    after it was issued (and before the next change was), never before its write returned; with
    none (nothing a reconciler acts on changed), when its write returned."""
    seen = next((t for t in sightings if t >= issued and (next_issued is None or t < next_issued)), None)
    return returned if seen is None else max(returned, seen)
