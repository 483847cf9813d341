"""The reference reconciler: cluster proxy settings and trusted CAs onto Windows nodes over SSH."""

from harness.reconciler.controller import Reconciler, ReconcilerSettings
from harness.reconciler.variants import VARIANTS

__all__ = ["VARIANTS", "Reconciler", "ReconcilerSettings"]
