"""The reference reconciler: cluster proxy settings and trusted CAs onto Windows nodes over SSH."""

from proxyfleet.harness.reconciler.controller import Reconciler, ReconcilerSettings
from proxyfleet.harness.reconciler.variants import VARIANTS, make_reconciler, reconciler_class

__all__ = ["VARIANTS", "Reconciler", "ReconcilerSettings", "make_reconciler", "reconciler_class"]
